package liveness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// procFails is the local host whose reads of /proc fail while fail is
// set, as a read on a link just back from a sleep does.
type procFails struct {
	remote.Local
	fail, lost atomic.Bool
}

func (h *procFails) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	if h.lost.Load() && strings.HasPrefix(p, "/proc/") {
		return nil, fmt.Errorf("read %s: %w", p, remote.ErrDisconnected)
	}
	if h.fail.Load() && strings.HasPrefix(p, "/proc/") {
		return nil, errors.New("read " + p + ": permission denied by a policy")
	}
	return h.Local.ReadAt(ctx, p, off, n)
}

// A worker seen running, then a poll that cannot read its process: the
// worker is unknown ("the host's /proc could not be read"), not running
// on the last poll's evidence, and running again once its process reads.
// The fresh poll after a night with the lid closed said "running" of a
// worker that had exited while it slept (TestWakeAfterNight, in CI).
func TestAProcessNotReadIsNotKnownAlive(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cmd := exec.Command("sh", "-c", "while :; do sleep 1; done", "synthwatch", "worker", "--root", root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	st, _ := json.Marshal(parse.WorkerState{Schema: 1, PID: cmd.Process.Pid, State: parse.WorkerRunning, Category: "B1",
		StartedAt: time.Now().Add(-time.Hour), UpdatedAt: time.Now()})
	lay := parse.Layout{Root: root}
	if err := os.MkdirAll(filepath.Dir(lay.WorkerJSON()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lay.WorkerJSON(), st, 0o644); err != nil {
		t.Fatal(err)
	}
	h := &procFails{}
	l := New(Config{Reads: h, Host: h, Layout: lay, WorkerLog: lay.WorkerLog()})
	poll := func(n int) snapshot.Worker {
		now := time.Now()
		lr := l.Read(context.Background(), now, n, Asks{})
		l.FoldJSON(lr.WorkerJSON())
		l.Fold(lr, now)
		l.Judge(false, "B1", time.Time{})
		return l.Shown()
	}
	if w := poll(1); w.State != snapshot.WorkerRunning || w.PID != cmd.Process.Pid {
		t.Fatalf("the first poll: %+v", w)
	}
	h.fail.Store(true)
	if w := poll(2); w.State != snapshot.WorkerUnknown || !strings.Contains(w.Reason, "/proc could not be read") {
		t.Errorf("a poll that could not read the process: %s (%q), want unknown", w.State, w.Reason)
	}
	h.fail.Store(false)
	if w := poll(3); w.State != snapshot.WorkerRunning || w.PID != cmd.Process.Pid {
		t.Errorf("its process read again: %+v", w)
	}
	// a read that failed on the lost link says so: the Watcher reads the
	// poll again once the link is back (pipeline's lost), judging nothing
	h.lost.Store(true)
	if lr := l.Read(context.Background(), time.Now(), 4, Asks{}); !lr.LinkLost() {
		t.Errorf("a read on the lost link: LinkLost false (%v)", lr.err)
	}
	h.lost.Store(false)
	if lr := l.Read(context.Background(), time.Now(), 5, Asks{}); lr.LinkLost() {
		t.Errorf("a read on the link: LinkLost true (%v)", lr.err)
	}
}
