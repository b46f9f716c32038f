package liveness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote"
)

// A launch's shell read before it has exec'd the worker (a loaded host) is
// judged again once its arguments are the worker's: an exec keeps the pid
// and its start time, and the first judgement was kept for both, so launch
// said "exited at once" of a worker that ran (TestActionsOverDropbear, CI).
func TestProcJudgedAgainAfterExec(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bin := filepath.Join(t.TempDir(), "synthwatch")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nsleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `read -r _; exec "$0" worker --root "$1"`, bin, root)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := NewReader(remote.Local{}, root)
	ctx := context.Background()
	var p *Proc
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		// right after the fork, the child is not yet the shell (no cmdline)
		if p, err = r.Read(ctx, cmd.Process.Pid); err == nil && p != nil && p.args[0] == "sh" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell never read: %+v %v", p, err)
		}
	}
	if p.worker {
		t.Fatalf("the shell before its exec: %+v", p)
	}
	in.Write([]byte("go\n"))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		p, err = r.Read(ctx, cmd.Process.Pid)
		if err == nil && p != nil && p.worker {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after its exec: %+v %v", p, err)
		}
	}
}
