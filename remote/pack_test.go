package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// recHost runs every command on the laptop and keeps what it ran.
type recHost struct {
	Local
	argvs [][]string
	res   []ExecResult
}

func (h *recHost) Exec(ctx context.Context, argv ...string) (ExecResult, error) {
	r, err := h.Local.Exec(ctx, argv...)
	h.argvs = append(h.argvs, argv)
	h.res = append(h.res, r)
	return r, err
}

func packed(argv []string) bool { return len(argv) == 5 && argv[2] == unpackScript }

// loadCount runs a batch that counts f by p and checks the count was
// the batch's: 2 lines, no read of the host beside it.
func loadCount(t *testing.T, p *Fallback, f string) {
	t.Helper()
	b := &Batch{}
	c := NewCounter(f)
	b.Count(c)
	if err := p.Run(context.Background(), b); err != nil {
		t.Fatalf("load: %v", err)
	}
	up := (&Poller{Counters: []*Counter{c}, Asks: b.PollAsks()}).Poll(context.Background(), failHost{}).Counts[0]
	if up.Err != nil || up.Lines != 2 {
		t.Fatalf("count: %+v", up)
	}
	if hits, misses := b.PollAsks().Counts(); hits == 0 || misses > 0 {
		t.Fatalf("%d reads from the batch, %d not in it %v", hits, misses, b.PollAsks().Missed())
	}
}

// On a host with base64 and gzip, the fallback's answer says so, and the
// next batch goes packed, whole on the command line, and is answered.
func TestFallbackPacksWhereTheHostUnpacks(t *testing.T) {
	f := filepath.Join(t.TempDir(), "raw.jsonl")
	writeFile(t, f, "{}\n{}\n")
	h := &recHost{}
	p := NewFallback(h)
	loadCount(t, p, f)
	if !p.Unpacks() || packed(h.argvs[0]) {
		t.Fatalf("first batch packed %v, unpacks after it %v; want plain, then true", packed(h.argvs[0]), p.Unpacks())
	}
	loadCount(t, p, f)
	if len(h.argvs) != 2 || !packed(h.argvs[1]) {
		t.Fatalf("the second batch: %d execs, packed %v", len(h.argvs), len(h.argvs) > 1 && packed(h.argvs[1]))
	}
	if line, stdin := WireCommand(framedArgv(execMark(), h.argvs[1]), MaxLine, false); len(line) > MaxLine || stdin != nil {
		t.Fatalf("packed line %d bytes, %d on stdin", len(line), len(stdin))
	}
}

// Up to where it stops packing, a batch grown a path at a time (random
// names: little to compress) packs into a line that SSH's Exec, framed
// (frame.go), sends whole: nothing on stdin.
func TestPackedLineFitsFramed(t *testing.T) {
	b := &Batch{}
	for i := 0; ; i++ {
		var r [12]byte
		rand.Read(r[:])
		b.Cat("/scratch/night/prepared/"+hex.EncodeToString(r[:])+"/raw_responses.jsonl", 100)
		argv, ok := PackCommand(b.Argv(), MaxLine)
		if !ok {
			if i < 10 {
				t.Fatalf("stopped packing at %d paths", i+1)
			}
			return
		}
		if line, stdin := WireCommand(framedArgv(execMark(), argv), MaxLine, false); len(line) > MaxLine || stdin != nil {
			t.Fatalf("%d paths: packed, framed line %d bytes, %d on stdin", i+1, len(line), len(stdin))
		}
	}
}

// A host without base64 (a PATH lacking it) that a stale hint
// took for one that unpacks: the packed batch says why it failed (exit
// ExitUnpack), the same batch runs as it is and is answered, the host is
// taken for one that cannot unpack, and the next batch goes as it is
// first; the fallback's own answer says it cannot either.
func TestFallbackWithoutUnpackers(t *testing.T) {
	t.Setenv("PATH", pathOf(t, "gzip"))
	f := filepath.Join(t.TempDir(), "raw.jsonl")
	writeFile(t, f, "{}\n{}\n")
	h := &recHost{}
	p := NewFallback(h)
	p.SetUnpack(true)
	loadCount(t, p, f)
	if len(h.argvs) != 2 || !packed(h.argvs[0]) || packed(h.argvs[1]) {
		t.Fatalf("%d execs, want the packed batch, then the same as it is", len(h.argvs))
	}
	if r := h.res[0]; r.ExitCode != ExitUnpack || !strings.Contains(string(r.Stderr), "could not unpack the command (base64 -d | gzip -d)") {
		t.Fatalf("packed batch on a host without base64: exit %d, stderr %q", r.ExitCode, r.Stderr)
	}
	if p.Unpacks() {
		t.Fatal("a host that could not unpack is still taken for one that can")
	}
	loadCount(t, p, f)
	if len(h.argvs) != 3 || packed(h.argvs[2]) || p.Unpacks() {
		t.Fatalf("the next batch: %d execs in all, packed %v, unpacks %v", len(h.argvs), packed(h.argvs[len(h.argvs)-1]), p.Unpacks())
	}
}

// A batch whose packed line is over MaxLine (ops that do not compress:
// hundreds of random paths) goes as it is, its script on stdin, and is
// answered.
func TestFallbackTooBigToPack(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "raw.jsonl")
	writeFile(t, f, "{}\n{}\n")
	b := &Batch{}
	for range 400 {
		var r [16]byte
		rand.Read(r[:])
		b.Cat(filepath.Join(dir, hex.EncodeToString(r[:])), 100)
	}
	if _, ok := PackCommand(b.Argv(), MaxLine); ok {
		t.Fatal("a batch of 400 random paths packed within MaxLine")
	}
	h := &recHost{}
	p := NewFallback(h)
	p.SetUnpack(true)
	c := b.Count(NewCounter(f))
	if err := p.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if len(h.argvs) != 1 || packed(h.argvs[0]) {
		t.Fatalf("%d execs, packed %v", len(h.argvs), packed(h.argvs[0]))
	}
	if !c.Answered() || c.ans.stat == nil || c.ans.stat.err != nil || c.ans.stat.fi.Size != 6 {
		t.Fatalf("stat: %+v", c.ans)
	}
}

// A host whose gzip compresses but will not decompress (a busybox built
// without gzip -d): its U record says base64 and gzip are there, yet a
// packed batch fails; the host is then taken for one that cannot unpack
// for the session, whatever its later U records say.
func TestFallbackUnpackFailureSticks(t *testing.T) {
	bin := pathOf(t, "base64")
	gz, err := exec.LookPath("gzip")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(bin, "gzip"), "#!/bin/sh\nfor a; do case $a in -d*) echo 'gzip: -d: unknown option' >&2; exit 1;; esac; done\nexec "+gz+" \"$@\"\n")
	must(t, os.Chmod(filepath.Join(bin, "gzip"), 0o755))
	t.Setenv("PATH", bin)
	f := filepath.Join(t.TempDir(), "raw.jsonl")
	writeFile(t, f, "{}\n{}\n")
	h := &recHost{}
	p := NewFallback(h)
	p.SetUnpack(true)
	for i := range 3 {
		loadCount(t, p, f)
		if p.Unpacks() {
			t.Fatalf("poll %d: the host is taken for one that unpacks again", i+1)
		}
	}
	if len(h.argvs) != 4 || !packed(h.argvs[0]) || packed(h.argvs[1]) || packed(h.argvs[2]) || packed(h.argvs[3]) {
		t.Fatalf("%d execs, want the packed batch once, then every batch as it is", len(h.argvs))
	}
	if p.SetUnpack(true); p.Unpacks() {
		t.Fatal("a stale hint undid what the session learnt")
	}
}

// pathOf is a folder of links to the programs the fallback runs, and
// extra: a PATH that has only those.
func pathOf(t *testing.T, extra ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, c := range append([]string{"sh", "stat", "head", "tail", "wc", "cat", "mkdir", "rm", "mktemp", "timeout", "dd", "tr", "sed", "cut", "sort", "grep", "readlink"}, extra...) {
		p, err := exec.LookPath(c)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		must(t, os.Symlink(p, filepath.Join(bin, c)))
	}
	return bin
}
