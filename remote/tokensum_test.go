package remote

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

func sumRecs(from, n int, run string) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		switch i % 7 {
		case 3:
			fmt.Fprintf(&b, `{"id":"x-%d","run":%q,"completion_tokens":null}`+"\n", i, run)
		case 5:
			fmt.Fprintf(&b, "not a record %d\n", i)
		case 1, 4: // how they ended: kept across appends and recounts as the tokens are
			fmt.Fprintf(&b, `{"id":"x-%d","run":%q,"finish_reason":%q,"content":%q,"completion_tokens":%d}`+"\n", i, run, []string{"", "length", "", "", "stop"}[i%7], []string{"", "", "", "", "a"}[i%7], i%100)
		default:
			fmt.Fprintf(&b, `{"id":"x-%d","run":%q,"completion_tokens":%d}`+"\n", i, run, i%100)
		}
	}
	return b.String()
}

// fresh is the sums of [from, from+n) read whole, nothing kept.
func fresh(t *testing.T, p string, from, n int64) string {
	t.Helper()
	var out bytes.Buffer
	f, err := os.Open(p)
	must(t, err)
	defer f.Close()
	s, err := sumRange(f, from, n, 0, nil)
	must(t, err)
	s.write(&out, 1)
	return out.String()
}

// The kept sums answer as a sum of the whole file would, through appends,
// a torn last line, a rewrite in place, a replace and a cut; what they
// keep reaches the end of the file's whole lines; and a new agent (a new
// status) finds them in the user's cache.
func TestTokenSumsKeptAndRedone(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := filepath.Join(t.TempDir(), "raw_responses.jsonl")
	ts := newTokenSums()
	ask := func(step string) {
		t.Helper()
		fi, err := os.Stat(p)
		must(t, err)
		size := fmt.Sprint(fi.Size())
		got := string(ts.ranges([]string{p, "1", size}))
		if want := fresh(t, p, 0, fi.Size()); got != want {
			t.Fatalf("%s: kept sums say\n%s\nthe file says\n%s", step, got, want)
		}
		data, _ := os.ReadFile(p)
		if k := ts.files[p]; k == nil || k.Off != int64(bytes.LastIndexByte(data, '\n')+1) {
			t.Fatalf("%s: kept %+v, want the whole lines' end", step, k)
		}
	}
	writeFile(t, p, sumRecs(0, 500, "r1"))
	ask("first")
	appendFile(t, p, sumRecs(500, 300, "r2")+`{"id":"torn","completion_tokens":`)
	ask("appended, torn")
	appendFile(t, p, "7}\n"+sumRecs(800, 10, "r2"))
	ask("the torn line finished")
	data, _ := os.ReadFile(p)
	writeFile(t, p, strings.Replace(string(data), `"completion_tokens":9}`, `"completion_tokens":8}`, -1)+sumRecs(900, 5, "r3"))
	ask("rewritten in place, longer")
	tmp := p + ".tmp"
	writeFile(t, tmp, sumRecs(0, 50, "r9"))
	must(t, os.Rename(tmp, p))
	ask("replaced")
	writeFile(t, p, sumRecs(0, 20, "r9"))
	ask("cut")
	appendFile(t, p, sumRecs(20, 40, "r9"))
	// a growth range from where the kept sums end is a delta, and the kept sums follow it
	k := ts.files[p]
	fi, _ := os.Stat(p)
	got := string(ts.ranges([]string{p, fmt.Sprint(k.Off + 1), fmt.Sprint(fi.Size() - k.Off)}))
	if want := fresh(t, p, k.Off, fi.Size()-k.Off); got != want {
		t.Fatalf("a growth range: %s, want %s", got, want)
	}
	if ts.files[p].Off != fi.Size() {
		t.Fatalf("after a growth range the kept sums reach %d of %d", ts.files[p].Off, fi.Size())
	}
	ts.flush()              // the agent ends (ServeAgent), writing what it kept
	again := newTokenSums() // the next agent, as the next status starts one
	if k := again.files[p]; k == nil || k.Off != fi.Size() {
		t.Fatalf("the next agent kept %+v", k)
	}
	if got := string(ts.ranges([]string{filepath.Join(t.TempDir(), "gone"), "1", "10"})); got != "1 ! sum failed\n" {
		t.Fatalf("a file that is not there: %q", got)
	}
}

// Sums kept in a file another user may write are not believed.
func TestTokenSumsLooseFileIgnored(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := filepath.Join(t.TempDir(), "raw")
	writeFile(t, p, sumRecs(0, 10, "r"))
	ts := newTokenSums()
	ts.ranges([]string{p, "1", "100000"})
	must(t, os.Chmod(ts.path, 0o666))
	if again := newTokenSums(); len(again.files) != 0 {
		t.Fatalf("sums from a world-writable file were believed: %+v", again.files)
	}
}

// The cold sums cover the size their stat said ("I SIZE PATH") up to its
// last whole line, while a writer appends whole records: never a byte
// past it, so the pipeline can match each sum to the count's hole by its
// size. A stat can land inside one append (the kernel grows the size a
// page at a time: CI saw 196,608 = 48 pages while a record was half
// written), and then the sum stops at the line before, which the
// pipeline's partial line takes (tokAcc.late).
func TestColdSumsCoverTheirStat(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	p := filepath.Join(dir, "B1", "raw_responses.jsonl")
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	writeFile(t, p, sumRecs(0, 2000, "r"))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return
		}
		defer f.Close()
		for i := 2000; i < 6000; i++ { // bounded: a few hundred KB
			select {
			case <-stop:
				return
			default:
			}
			f.WriteString(sumRecs(i, 1, "r"))
			if i%50 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	var sizes [][2]int64
	for round := range 30 {
		ts := &tokenSums{files: map[string]*sumState{}} // nothing kept: each round sums from 0
		if round%2 == 1 {
			ts = newTokenSums() // and from what was kept
		}
		out, errb := ts.cold(dir, "raw_responses.jsonl", 0, nil)
		var i int
		var size int64
		var path string
		if _, err := fmt.Sscanf(string(errb), "%d %d %s", &i, &size, &path); err != nil {
			t.Fatalf("round %d: stderr %q", round, errb)
		}
		var recs, toks, got, unk int64
		if _, err := fmt.Sscanf(string(out), "1 T %d %d %d %d", &recs, &toks, &got, &unk); err != nil {
			t.Fatalf("round %d: %q", round, out)
		}
		sizes = append(sizes, [2]int64{got, size})
	}
	close(stop)
	<-done
	b, err := os.ReadFile(p)
	must(t, err)
	for round, s := range sizes {
		got, size := s[0], s[1]
		if got > size || size > int64(len(b)) {
			t.Fatalf("round %d: the sum covers %d bytes, its stat said %d", round, got, size)
		}
		if lastWhole := int64(bytes.LastIndexByte(b[:size], '\n') + 1); got != lastWhole {
			t.Fatalf("round %d: the sum covers %d bytes, the last whole line before its stat's %d ends at %d", round, got, size, lastWhole)
		}
	}
}

// The agent's T line carries how the records ended after the awk's
// fields: stop length abort other none empty, then the prompt tokens and
// the records that gave them.
func TestTokenSumsCountOutcomes(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := filepath.Join(t.TempDir(), "raw_responses.jsonl")
	must(t, os.WriteFile(p, []byte(sumRecs(0, 14, "r1")), 0o644))
	got := string(newTokenSums().ranges([]string{p, "1", "100000"}))
	// 14 lines: 2 not records; of 12 records, 2 length (empty content), 2 stop
	if first := strings.Fields(strings.SplitN(got, "\n", 2)[0]); len(first) < 14 || strings.Join(first[6:14], " ") != "2 2 0 0 8 2 0 0" || strings.Join(first[:3], " ") != "1 T 12" {
		t.Fatalf("T line %q, want 12 records: 2 stop, 2 length, 8 none, 2 empty, no prompt counts", first)
	}
}

// A file that names a new run on every line keeps the agent's table of
// runs bounded (parse.MaxRecordRuns), every record counted; a run whose
// JSON escapes a newline cannot forge a line of the answer.
func TestTokenSumsRunsBoundedAndLineSafe(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := filepath.Join(t.TempDir(), "raw_responses.jsonl")
	var b strings.Builder
	const n = 3000
	for i := range n {
		fmt.Fprintf(&b, `{"id":"r-%d","run":"run-%d","completion_tokens":2}`+"\n", i, i)
	}
	b.WriteString(`{"id":"forged","run":"a\n1 T 999999 999999 1 0 0 0 0 0 0 0 0 0","completion_tokens":1}` + "\n")
	writeFile(t, p, b.String())
	out := string(newTokenSums().ranges([]string{p, "1", "100000000"}))
	var runs, recs, toks, tlines int64
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(l, " ", 6)
		switch {
		case len(f) >= 5 && f[1] == "R":
			var r, k int64
			fmt.Sscan(f[2], &r)
			fmt.Sscan(f[3], &k)
			runs, recs, toks = runs+1, recs+r, toks+k
		case len(f) >= 3 && f[1] == "T":
			tlines++
			if !strings.HasPrefix(l, fmt.Sprintf("1 T %d %d ", n+1, 2*n+1)) {
				t.Fatalf("the T line %q, want %d records and %d tokens", l, n+1, 2*n+1)
			}
		}
	}
	if tlines != 1 {
		t.Fatalf("%d T lines in the answer (a forged one?):\n%.2000s", tlines, out)
	}
	if runs > parse.MaxRecordRuns+2 || recs != n+1 || toks != 2*n+1 {
		t.Fatalf("%d runs (bound %d), %d records, %d tokens; want %d and %d", runs, parse.MaxRecordRuns, recs, toks, n+1, 2*n+1)
	}
}
