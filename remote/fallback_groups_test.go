package remote

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The fallback reads its files in groups (one cat of the small files, one
// wc of the counted ones, one tail of their ends) and proves each by a
// second stat: a file written between its stat and its group's read
// (here by shims of cat, wc and tail that append to both files first, as
// a live worker does) is read again by itself, so every answer is of the
// size the stat gave: the whole file's bytes, the count, the end.
func TestFallbackGroupsProvedBySecondStat(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "B1", "raw.jsonl")
	big := filepath.Join(dir, "B2", "raw.jsonl")
	must(t, os.MkdirAll(filepath.Dir(small), 0o755))
	must(t, os.MkdirAll(filepath.Dir(big), 0o755))
	smallText := strings.Repeat(`{"id":1}`+"\n", 10)
	bigText := strings.Repeat(`{"id":"x","content":"yyyy"}`+"\n", 20000)
	writeFile(t, small, smallText)
	writeFile(t, big, bigText)
	shims := t.TempDir()
	for _, c := range []string{"cat", "wc", "tail"} {
		real, err := exec.LookPath(c)
		must(t, err)
		// the first call of each appends a record to both files, then runs
		must(t, os.WriteFile(filepath.Join(shims, c), []byte("#!/bin/sh\n"+
			"[ -e "+Quote(shims+"/"+c+".done")+" ] || { : >"+Quote(shims+"/"+c+".done")+"; "+
			"printf '%s\\n' '{\"id\":\"grown\"}' >>"+Quote(small)+"; printf '%s\\n' '{\"id\":\"grown\"}' >>"+Quote(big)+"; }\n"+
			"exec "+real+` "$@"`+"\n"), 0o755))
	}
	t.Setenv("PATH", shims+":"+os.Getenv("PATH"))
	b := &Batch{}
	cs, cb := NewCounter(small), NewCounter(big)
	cb.RemoteAbove = 1 << 10
	b.Count(cs)
	b.Count(cb)
	x := b.Exec("sh", "-c", "echo ran") // its answer comes in the M record, after the ends
	argv := b.Argv()
	cmd := exec.Command(argv[0], argv[1:]...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	for _, c := range []string{"cat", "wc", "tail"} {
		if _, err := os.Stat(filepath.Join(shims, c+".done")); err != nil {
			t.Fatalf("the fallback ran no %s: the test grew nothing", c)
		}
	}
	a, err := parseBatchOf(out, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := a.stats[small]; s.err != nil || s.fi.Size != int64(len(smallText)) {
		t.Fatalf("small's stat: %+v", s)
	}
	if r := a.reads[small]; len(r) != 1 || string(r[0].data) != smallText || r[0].off != 0 || !r[0].eof {
		t.Errorf("small read whole: %+v, want the %d bytes its stat gave", r, len(smallText))
	}
	if c := a.counts[big]; c.err != "" || c.lines != 20000 || c.n != int64(len(bigText)) || c.from != 1 {
		t.Errorf("big's count: %+v, want 20000 lines of %d bytes", c, len(bigText))
	}
	end := false
	for _, r := range a.reads[big] {
		if r.err == nil && r.off+int64(len(r.data)) == int64(len(bigText)) && string(r.data) == bigText[r.off:] {
			end = true
		}
	}
	if !end {
		t.Errorf("big's end: %+v, want bytes ending at %d", a.reads[big], len(bigText))
	}
	if r, ok := x.Result(); !ok || string(r.Stdout) != "ran\n" {
		t.Errorf("the exec beside the reads: %v %+v", ok, r)
	}
}

// runFallback runs b's fallback under dash and parses its answer.
func runFallback(t *testing.T, b *Batch) *answers {
	t.Helper()
	argv := b.Argv()
	cmd := exec.Command("dash", append([]string{"-c"}, argv[2:]...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	a, err := parseBatchOf(out, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Names that differ only by a space or a tab at their end: the one stat
// and the one wc are matched to their files byte for byte, so each file
// gets its own size, bytes and count, and the records after them stand.
func TestFallbackGroupsKeepNamesExact(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"a ": "hello\n", "a": "world, longer\n",
		"log ": strings.Repeat("A", 1000), "log": "short\n",
		"c\t": strings.Repeat("a\n", 5000), "c": strings.Repeat("abcd", 2500),
	}
	for n, s := range files {
		writeFile(t, filepath.Join(dir, n), s)
	}
	b := &Batch{}
	cats := map[string]*CatAsk{}
	for _, n := range []string{"a ", "a"} {
		cats[n] = b.Cat(filepath.Join(dir, n), 100)
	}
	for _, n := range []string{"log ", "log"} {
		b.Tail(NewTail(filepath.Join(dir, n)))
	}
	for _, n := range []string{"c\t", "c"} {
		c := NewCounter(filepath.Join(dir, n))
		c.RemoteAbove = 100
		b.Count(c)
	}
	x := b.Exec("sh", "-c", "echo ran")
	a := runFallback(t, b)
	for n, c := range cats {
		if r, ok := c.Result(); !ok || r.Err != nil || string(r.Data) != files[n] {
			t.Errorf("cat %q: %v %+v", n, ok, r)
		}
	}
	for _, n := range []string{"log ", "log", "c\t", "c"} {
		if s := a.stats[filepath.Join(dir, n)]; s.err != nil || s.fi.Size != int64(len(files[n])) {
			t.Errorf("stat %q: %+v, want %d bytes", n, s, len(files[n]))
		}
	}
	if c := a.counts[filepath.Join(dir, "c\t")]; c.lines != 5000 || c.err != "" {
		t.Errorf("count of c<TAB>: %+v, want 5000 lines", c)
	}
	if c := a.counts[filepath.Join(dir, "c")]; c.lines != 0 || c.n != 10000 || c.err != "" {
		t.Errorf("count of c: %+v, want 0 lines of 10000 bytes", c)
	}
	if r, ok := x.Result(); !ok || string(r.Stdout) != "ran\n" {
		t.Errorf("the exec after them: %v %+v", ok, r)
	}
}

// A small counted file whose size moves between the two stats leaves its
// section of the one tail with no known length: the files after it in
// that tail are read by themselves, so each still gets its end (as the
// agent gives every end).
func TestFallbackEndsPastAMovedFile(t *testing.T) {
	dir := t.TempDir()
	a, c := filepath.Join(dir, "a"), filepath.Join(dir, "c")
	aText, cText := strings.Repeat("a\n", 100), strings.Repeat("c\n", 100)
	writeFile(t, a, aText)
	writeFile(t, c, cText)
	shims := t.TempDir()
	real, err := exec.LookPath("tail")
	must(t, err)
	// the first tail (the group's) appends to a first
	must(t, os.WriteFile(filepath.Join(shims, "tail"), []byte("#!/bin/sh\n"+
		"[ -e "+Quote(shims+"/done")+" ] || { : >"+Quote(shims+"/done")+"; echo a >>"+Quote(a)+"; }\n"+
		"exec "+real+` "$@"`+"\n"), 0o755))
	t.Setenv("PATH", shims+":"+os.Getenv("PATH"))
	b := &Batch{}
	for _, p := range []string{a, c} {
		k := NewCounter(p)
		k.RemoteAbove = 10
		b.Count(k)
	}
	ans := runFallback(t, b)
	for p, text := range map[string]string{a: aText, c: cText} {
		end := false
		for _, r := range ans.reads[p] {
			if r.err == nil && r.off+int64(len(r.data)) == int64(len(text)) && string(r.data) == text[r.off:] {
				end = true
			}
		}
		if !end {
			t.Errorf("%s: no end read at %d: %+v", filepath.Base(p), len(text), ans.reads[p])
		}
	}
}

// Sizes a host could send that do not fit the answer (negative, or
// summing past int64 to the data's length) are refused, not sliced.
func TestBatchRefusesSizesThatDoNotFit(t *testing.T) {
	t.Parallel()
	k := "~swabc"
	b := &Batch{nonce: k}
	b.Exec("true")
	m := func(table, data string) []byte {
		return []byte(fmt.Sprintf("@M ok 1 0 0 %d %d\n%s%s%s\n", len(table), len(data), table, data, k))
	}
	for name, out := range map[string][]byte{
		"table sizes that wrap": m("R ok 0 0 0 4611686018427387904 4611686018427387904 /a\x00R ok 0 0 0 4611686018427387904 4611686018427387907 /b\x00", "abc"),
		"an end of no size":     m("E ok -5 -5 0 0 0 /a\x00T ok 0 0 0 11 0 -\x00", "==> /a <==\n"),
		"stdout under zero":     m("X ok 0 -1 0 3 0 0\x00", "abc"),
		"a record's stdout":     []byte("@X ok 0 -1 0 1 3\n0abc" + k + "\n"),
		"path and data wrap":    []byte("@R ok 0 0 0 9223372036854775807 2\n/a" + k + "\n"),
	} {
		a, _ := parseRecords(out, b, nil)
		if len(a.reads) != 0 || len(a.execs) != 0 {
			t.Errorf("%s: answered %+v %+v", name, a.reads, a.execs)
		}
	}
}
