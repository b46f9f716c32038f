package remote

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestBatchAnswersLikeTheHost: what one batch's handles hold (a Poller's
// Tail and Count, Cat, Exec, Glob, RealPath) is what the host answers to each
// question asked alone: stats (to the second: SFTP's precision), reads,
// missing files, globs, commands and host counts, on names with spaces,
// quotes, a newline and a leading dash.
func TestBatchAnswersLikeTheHost(t *testing.T) {
	dir := t.TempDir()
	prep := filepath.Join(dir, "prepared")
	names := []string{"B1", "with space", `it's "quoted"`, "-dash", "-n", `C:\new`, `back\\slash`, "new\nline"}
	for i, n := range names {
		d := filepath.Join(prep, n)
		must(t, os.MkdirAll(d, 0o755))
		writeFile(t, filepath.Join(d, "raw.jsonl"), strings.Repeat("{\"id\":1}\n", 10*(i+1))+"torn")
	}
	big := filepath.Join(prep, "B1", "big.jsonl")
	writeFile(t, big, strings.Repeat(`{"id":"x","content":"yyyyyyyy"}`+"\n", 20000))
	must(t, os.MkdirAll(filepath.Join(prep, "B1", "adir"), 0o755))
	log := filepath.Join(dir, "log")
	writeFile(t, log, strings.Repeat("line\n", 3000))

	h := Local{}
	b := &Batch{}
	glob := b.Glob(filepath.Join(prep, "*", "raw.jsonl"), prep, "raw.jsonl")
	tl := NewTail(log)
	tl.StartBack = 1000
	b.Tail(tl)
	cb := NewCounter(big)
	b.Count(cb)
	counters := []*Counter{cb}
	for _, n := range names {
		c := NewCounter(filepath.Join(prep, n, "raw.jsonl"))
		b.Count(c)
		counters = append(counters, c)
	}
	gone := NewCounter(filepath.Join(prep, "B1", "gone.jsonl"))
	b.Count(gone)
	nope := b.Cat(filepath.Join(dir, "nope"), 100)
	cat := b.Cat(log, 50)
	x := b.Exec("sh", "-c", "echo out; echo err >&2; exit 3")
	realDir := b.RealPath(dir)
	t.Chdir(dir)
	t.Setenv("CDPATH", ".:/tmp") // a user's rc may export it: cd then prints where it went
	realRel := b.RealPath("prepared")
	if err := NewFallback(h).Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	asks := b.PollAsks()
	files := []*fileAns{asks.tail(tl), asks.counter(gone)}
	for _, c := range counters {
		files = append(files, asks.counter(c))
	}
	for i, f := range append([]string{log, gone.Path}, counterPaths(counters)...) {
		if files[i] == nil || files[i].stat == nil {
			t.Errorf("stat %q: not in the batch", f)
			continue
		}
		got, gerr := files[i].stat.fi, files[i].stat.err
		want, werr := h.Stat(ctx, f)
		if (gerr != nil) != (werr != nil) || errors.Is(gerr, fs.ErrNotExist) != errors.Is(werr, fs.ErrNotExist) {
			t.Errorf("stat %q: batch %v, host %v", f, gerr, werr)
			continue
		}
		if werr == nil && (got.Size != want.Size || got.ModTime.Unix() != want.ModTime.Unix() || got.IsDir != want.IsDir) {
			t.Errorf("stat %q: batch %+v, host %+v", f, got, want)
		}
	}
	g, ok := glob.Result()
	if !ok || g.Err != nil {
		t.Fatalf("glob: answered %v, %v", ok, g.Err)
	}
	gotGlob := g.Paths
	wantGlob, err := h.Glob(ctx, filepath.Join(prep, "*", "raw.jsonl"))
	must(t, err)
	sort.Strings(gotGlob)
	sort.Strings(wantGlob)
	if !reflect.DeepEqual(gotGlob, wantGlob) {
		t.Errorf("glob: batch %q, host %q", gotGlob, wantGlob)
	}
	// the polls a cold start makes, answered by the batch, against the host
	pb, ph := &Poller{Tails: []*Tail{tl}, Counters: counters}, &Poller{Tails: []*Tail{NewTail(log)}}
	ph.Tails[0].StartBack = 1000
	for _, c := range counters {
		ph.Counters = append(ph.Counters, NewCounter(c.Path))
	}
	pb.Asks = asks
	rb, rh := pb.Poll(ctx, h), ph.Poll(ctx, h)
	for i := range rh.Counts {
		if rb.Counts[i].Lines != rh.Counts[i].Lines || rb.Counts[i].Size != rh.Counts[i].Size || (rb.Counts[i].Err != nil) != (rh.Counts[i].Err != nil) {
			t.Errorf("count %q: batch %d lines at %d (%v), host %d at %d (%v)", rh.Counts[i].Path, rb.Counts[i].Lines, rb.Counts[i].Size, rb.Counts[i].Err, rh.Counts[i].Lines, rh.Counts[i].Size, rh.Counts[i].Err)
		}
	}
	if !reflect.DeepEqual(rb.Tails[0].Lines, rh.Tails[0].Lines) || rb.Tails[0].Event != rh.Tails[0].Event {
		t.Errorf("tail: batch %d lines (%s), host %d lines (%s)", len(rb.Tails[0].Lines), rb.Tails[0].Event, len(rh.Tails[0].Lines), rh.Tails[0].Event)
	}
	checkHandles(t, "fallback", cat, log, nope, x)
	if r, ok := realDir.Result(); !ok || r.Err != nil || r.Path != mustReal(t, dir) {
		t.Errorf("realpath: %v %+v", ok, r)
	}
	if r, ok := realRel.Result(); !ok || r.Err != nil || r.Path != mustReal(t, prep) {
		t.Errorf("realpath of a relative root under CDPATH: %v %+v", ok, r)
	}
	if hits, misses := asks.Counts(); hits == 0 || misses > 0 {
		t.Errorf("%d reads from the batch, %d not in it: %v", hits, misses, asks.Missed())
	}
}

func counterPaths(cs []*Counter) []string {
	var ps []string
	for _, c := range cs {
		ps = append(ps, c.Path)
	}
	return ps
}

func mustReal(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(p)
	must(t, err)
	return r
}

// TestBatchRecordCutShortIsRefused: a read that came back shorter than its
// header said (the file shrank between its stat and its read) ends the
// parse: the answers before it stand, it and those after are not served.
func TestBatchRecordCutShortIsRefused(t *testing.T) {
	t.Parallel()
	n := "~swNONCE"
	out := "@S f 10 1700000000 0 2 0\n/a" + n + "\n" +
		"@R ok 0 1 0 2 10\n/a01234" + n + "\n" + // 5 of 10 bytes
		"@S f 3 1700000000 0 2 0\n/b" + n + "\n"
	a, err := parseBatch([]byte("Welcome to the GPU box!\n"+out), n) // a login banner first
	if err == nil {
		t.Fatal("a cut record was taken")
	}
	if _, ok := a.stats["/a"]; !ok {
		t.Error("the answer before the cut record was lost")
	}
	if len(a.reads["/a"]) != 0 {
		t.Error("the cut read was served")
	}
	if _, ok := a.stats["/b"]; ok {
		t.Error("an answer after the cut record was served")
	}
}

// TestBatchWithoutStatC: a host whose stat has no -c (BSD) gets no batch:
// Run fails, no handle is answered, and the poll asks the host as usual.
func TestBatchWithoutStatC(t *testing.T) {
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "stat"), "#!/bin/sh\necho 'stat: illegal option -- c' >&2\nexit 1\n")
	must(t, os.Chmod(filepath.Join(bin, "stat"), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	f := filepath.Join(t.TempDir(), "f")
	writeFile(t, f, "x\n")
	b := &Batch{}
	c := NewCounter(f)
	if b.Count(c); NewFallback(Local{}).Run(context.Background(), b) == nil {
		t.Fatal("the batch ran")
	}
	if b.PollAsks().Answered() || b.PollAsks().counts[c].Answered() {
		t.Fatal("a failed batch answered")
	}
	up := (&Poller{Counters: []*Counter{c}, Asks: b.PollAsks()}).Poll(context.Background(), Local{}).Counts[0]
	if up.Err != nil || up.Lines != 1 || up.Size != 2 {
		t.Fatalf("the host's count after a failed batch: %+v", up)
	}
}

// The fallback gzips its records where the host has gzip ("@Z NONCE" after
// the hello): parsed, they are the records it would have sent as they are;
// a gzip'd answer that inflates past the bound, or is cut, is an error, not
// a partial parse passed for whole.
func TestFallbackGzipsItsRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	writeFile(t, log, strings.Repeat("a line of a log that repeats\n", 5000))
	b := &Batch{}
	tl := NewTail(log)
	b.Tail(tl)
	b.Cat(log, 100)
	res, err := Local{}.Exec(context.Background(), b.Argv()...)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("fallback: %v %d %s", err, res.ExitCode, res.Stderr)
	}
	hello := "@H " + b.nonce + "\n@Z " + b.nonce + "\n"
	if !strings.HasPrefix(string(res.Stdout), hello) || len(res.Stdout) > 10<<10 {
		t.Fatalf("the answer is not gzip'd: %d bytes, %q…", len(res.Stdout), head(res.Stdout))
	}
	zipped, err := parseBatchOf(res.Stdout, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := gunzipBounded(res.Stdout[len(hello):], MaxExecOutput)
	if err != nil {
		t.Fatal(err)
	}
	asIs, err := parseBatchOf(append([]byte("@H "+b.nonce+"\n"), plain...), b, nil)
	if err != nil || !reflect.DeepEqual(zipped, asIs) || len(zipped.reads[log]) == 0 {
		t.Fatalf("gzip'd and plain records differ: %v", err)
	}
	if _, err := gunzipBounded(res.Stdout[len(hello):], 1000); err == nil {
		t.Error("inflated past the bound without an error")
	}
	if _, err := parseBatchOf(res.Stdout[:len(res.Stdout)-20], b, nil); err == nil {
		t.Error("a cut gzip'd answer parsed without an error")
	}
}
