package remote

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every reader answers a batch's handles as the host answers each
// question asked alone: the fallback as it is, the fallback packed on the
// command line, and the Go agent. A Cat of a file that a Tail also reads
// (its head at 0) is the Cat's bytes; a missing file is fs.ErrNotExist; a
// CountThen's command ran over exactly the bytes the host counted.
func TestHandlesAnsweredByEveryReader(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	writeFile(t, log, strings.Repeat("line\n", 3000))
	raw := filepath.Join(dir, "raw.jsonl")
	writeFile(t, raw, strings.Repeat("{\"id\":1}\n", 500))
	missing := filepath.Join(dir, "nope")
	argv := []string{"sh", "-c", `echo "out $1"; echo err >&2; exit 3`, "x", "it's \"quoted\"\n"}
	then := []string{"sh", "-c", `echo "$1 $2 $3"`, "x"}
	ctx := context.Background()
	h := &recHost{}
	p := NewFallback(h)
	ag := goAgent(t)
	for _, reader := range []string{"fallback", "fallback packed", "go agent"} {
		b := &Batch{Digests: reader == "go agent"}
		tl := NewTail(log)
		tl.StartBack = 1000
		b.Tail(tl)
		cat, gone := b.Cat(log, 50), b.Cat(missing, 100)
		c := NewCounter(raw)
		c.RemoteAbove = 100
		th := b.CountThen(c, 0, then...)
		x := b.Exec(argv...)
		var err error
		if reader == "go agent" {
			_, err = ag.Run(ctx, b)
		} else {
			err = p.Run(ctx, b)
		}
		if err != nil {
			t.Fatalf("%s: %v", reader, err)
		}
		if reader == "fallback packed" && !packed(h.argvs[len(h.argvs)-1]) {
			t.Fatalf("%s: the batch went as it is", reader)
		}
		checkHandles(t, reader, cat, log, gone, x)
		size := int64(500 * len("{\"id\":1}\n"))
		wantThen := raw + " 1 " + strconv.FormatInt(size, 10) + "\n"
		if r, n, ok := th.Result(); !ok || n != size || string(r.Stdout) != wantThen {
			t.Errorf("%s: the count's command %v over %d: %q, want %q", reader, ok, n, r.Stdout, wantThen)
		}
	}
}

// checkHandles checks a Cat of [0, 50) of log, a Cat of a missing file and
// an Exec against the host's answers to each asked alone.
func checkHandles(t *testing.T, reader string, cat *CatAsk, log string, gone *CatAsk, x *ExecAsk) {
	t.Helper()
	ctx := context.Background()
	want, err := Local{}.ReadAt(ctx, log, 0, 50)
	must(t, err)
	if r, ok := cat.Result(); !ok || r.Err != nil || string(r.Data) != string(want) {
		t.Errorf("%s: cat %v %q %v, host %q", reader, ok, r.Data, r.Err, want)
	}
	if r, ok := gone.Result(); !ok || !errors.Is(r.Err, fs.ErrNotExist) {
		t.Errorf("%s: a missing file's cat %v %v", reader, ok, r.Err)
	}
	wantX, err := Local{}.Exec(ctx, x.Argv()...)
	must(t, err)
	if r, ok := x.Result(); !ok || string(r.Stdout) != string(wantX.Stdout) || string(r.Stderr) != string(wantX.Stderr) || r.ExitCode != wantX.ExitCode {
		t.Errorf("%s: exec %v %+v, host %+v", reader, ok, r, wantX)
	}
}

// A handle the batch did not answer says so: no batch ran (nil), or the
// batch failed.
func TestUnansweredHandles(t *testing.T) {
	var x *ExecAsk
	var c *CatAsk
	var th *ThenAsk
	if _, ok := x.Result(); ok {
		t.Error("a nil exec handle answered")
	}
	if _, ok := c.Result(); ok {
		t.Error("a nil cat handle answered")
	}
	if _, _, ok := th.Result(); ok {
		t.Error("a nil count handle answered")
	}
	b := &Batch{}
	x, c = b.Exec("true"), b.Cat("/etc/hostname", 10)
	if err := NewFallback(failHost{}).Run(context.Background(), b); err == nil {
		t.Fatal("a failed exec loaded")
	}
	if _, ok := x.Result(); ok {
		t.Error("an exec handle answered by a failed batch")
	}
	if _, ok := c.Result(); ok {
		t.Error("a cat handle answered by a failed batch")
	}
}

// failHost fails every exec, as a dropped link does.
type failHost struct{ Local }

func (failHost) Exec(context.Context, ...string) (ExecResult, error) {
	return ExecResult{}, ErrDisconnected
}

// The batch's Procs op holds what the host says of the process
// worker.json names (cmdline, stat, cwd) and, that one being no worker,
// the scan, which is FindHolders' answer when it scanned for the same
// patterns, with no exec of its own; for other patterns (the root's real
// path learnt since) it scans itself. RealPath's handle is the root's.
func TestProcsAnsweredByTheBatch(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "30")
	cmd.Dir = dir
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	writeFile(t, filepath.Join(dir, "worker.json"), `{"pid": `+strconv.Itoa(pid)+`}`)
	pats := []string{GlobEscape(dir) + "/*.jsonl"}
	h := &recHost{}
	b := &Batch{}
	procs := b.Procs(filepath.Join(dir, "worker.json"), HoldersArgv(pats))
	real := b.RealPath(dir)
	must(t, NewFallback(h).Run(context.Background(), b))
	pr, ok := procs.Proc(pid)
	wantCmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	must(t, err)
	if !ok || pr.Cmdline.Err != nil || string(pr.Cmdline.Data) != string(wantCmd) || pr.Stat.Err != nil || len(pr.Stat.Data) == 0 {
		t.Fatalf("process %d: %v %+v", pid, ok, pr)
	}
	if !pr.HasCwd || pr.Cwd.Err != nil || pr.Cwd.Path != mustReal(t, dir) {
		t.Errorf("cwd: %+v, want %s", pr.Cwd, mustReal(t, dir))
	}
	if r, ok := real.Result(); !ok || r.Err != nil || r.Path != mustReal(t, dir) {
		t.Errorf("realpath: %v %+v", ok, r)
	}
	checkScan(t, h, pats, procs.Scan())
}

// checkScan: FindHolders takes the batch's scan for pats, and scans by
// itself for other patterns.
func checkScan(t *testing.T, h *recHost, pats []string, scan *ExecAsk) {
	t.Helper()
	if _, ok := scan.Result(); !ok {
		t.Fatal("the batch's scan was not answered")
	}
	before := len(h.argvs)
	if _, err := FindHolders(context.Background(), h, pats, scan); err != nil || len(h.argvs) != before {
		t.Errorf("the same scan: %d execs of its own, %v", len(h.argvs)-before, err)
	}
	if _, err := FindHolders(context.Background(), h, []string{pats[0] + "-other"}, scan); err != nil || len(h.argvs) != before+1 {
		t.Errorf("another scan: %d execs of its own, %v", len(h.argvs)-before, err)
	}
}
