package remote

import (
	"bytes"
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
}
