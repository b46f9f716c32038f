package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	st, err := ParseProcStat([]byte("4242 (py thon) (x)) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 987654 1000 10 18446744073709551615\n"))
	if err != nil || st.State != 'S' || st.PPID != 17 || st.StartTime != 987654 {
		t.Fatalf("%+v %v", st, err)
	}
	if _, err := ParseProcStat([]byte("12 (x) S 1")); err == nil {
		t.Fatal("a short stat parsed")
	}
}

// TestFindHoldersOverSSH: a plain process with the log as its stdout (the
// nohup python habit) is found through /proc over a real sshd, with write
// flags; a reader of the same file is found without them. Also measures
// the scan against a /proc read.
func TestFindHoldersOverSSH(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	h := dial(t, opts(t, s))
	dir := t.TempDir()
	logp := filepath.Join(dir, "logs", "inference_all.log")
	os.MkdirAll(filepath.Dir(logp), 0o755)
	os.WriteFile(logp, nil, 0o644)
	w := exec.Command("sh", "-c", "while :; do echo line; sleep 0.1; done >> "+Quote(logp))
	w.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-w.Process.Pid, syscall.SIGKILL); w.Wait() })
	r := exec.Command("sh", "-c", "exec 3< "+Quote(logp)+"; sleep 60")
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Process.Kill(); r.Wait() })
	time.Sleep(200 * time.Millisecond)
	ctx := context.Background()
	real, err := h.RealPath(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	hs, err := FindHolders(ctx, h, []string{GlobEscape(real) + "/logs/inference_all.log", GlobEscape(real) + "/prepared/*/raw_responses.jsonl"}, nil)
	scan := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	var writer, reader bool
	for _, x := range hs {
		switch {
		case x.PID == w.Process.Pid && x.FD == 1 && x.Writes():
			writer = true
		case x.PID == r.Process.Pid && x.FD == 3 && !x.Writes():
			reader = true
		}
	}
	if !writer || !reader {
		t.Fatalf("holders %+v (writer %d, reader %d)", hs, w.Process.Pid, r.Process.Pid)
	}
	t0 = time.Now()
	b, err := h.ReadAt(ctx, "/proc/"+strconv.Itoa(w.Process.Pid)+"/stat", 0, 4096)
	read := time.Since(t0)
	if _, perr := ParseProcStat(b); err != nil || perr != nil {
		t.Fatalf("stat: %v %v", err, perr)
	}
	cwd, err := h.ReadLink(ctx, "/proc/"+strconv.Itoa(r.Process.Pid)+"/cwd")
	if err != nil || cwd == "" {
		t.Fatalf("cwd %q %v", cwd, err)
	}
	t.Logf("scan of /proc (one exec): %s; one /proc/PID/stat read: %s", scan, read)
}
