package actions

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// TestActorChecksInOneBatch: over SSH, an action's checks (worker.json,
// the worker's /proc entries) are answered by one batch's handles, with
// no question to the host beside it, and the act ends
// the answers: the kill's own check after SIGTERM reads the host anew and
// sees the worker gone.
func TestActorChecksInOneBatch(t *testing.T) {
	s := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	root := t.TempDir()
	fillRunningRoot(t, root)
	h, err := remote.Dial(context.Background(), remote.Options{Target: s.User + "@" + s.Addr(), Identities: []string{s.KeyPath}, Home: t.TempDir(),
		Opts: []string{"UserKnownHostsFile=" + s.KnownHosts, "StrictHostKeyChecking=yes", "BatchMode=yes"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ch := &askCounter{SSH: h}
	c := Actor{H: ch, Root: root}.checked(context.Background(), false)
	if !c.standing() {
		t.Fatal("no batch for the checks")
	}
	ch.n.Store(0)
	pid, alive, err := c.runningWorker(context.Background())
	if err != nil || !alive || pid <= 0 {
		t.Fatalf("running worker: %d %v %v", pid, alive, err)
	}
	if pr, err := c.killable(context.Background(), pid); err != nil || pr == nil {
		t.Fatalf("killable: %v %v", pr, err)
	}
	if n := ch.n.Load(); n > 0 {
		t.Fatalf("%d checks asked the host beside the batch", n)
	}
	if _, ok := c.wjson.Result(); !ok {
		t.Fatal("worker.json was not answered by the batch")
	}
	if _, ok := c.checks.Procs.Proc(pid); !ok {
		t.Fatalf("the worker's /proc entries (pid %d) were not answered by the batch", pid)
	}
	how, err := Actor{H: h, Root: root}.Kill(context.Background(), pid, 2*time.Second)
	if err != nil || (how != "gone" && how != "killed") {
		t.Fatalf("kill: %q %v", how, err)
	}
	if alive, err := (Actor{H: h, Root: root}).isWorker(context.Background(), pid); err != nil || alive {
		t.Fatalf("after the kill: alive %v, %v", alive, err)
	}
}

// askCounter counts the questions asked of an SSH host.
type askCounter struct {
	*remote.SSH
	n atomic.Int64
}

func (a *askCounter) Stat(ctx context.Context, p string) (remote.FileInfo, error) {
	a.n.Add(1)
	return a.SSH.Stat(ctx, p)
}

func (a *askCounter) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	a.n.Add(1)
	return a.SSH.ReadAt(ctx, p, off, n)
}

func (a *askCounter) Exec(ctx context.Context, argv ...string) (remote.ExecResult, error) {
	a.n.Add(1)
	return a.SSH.Exec(ctx, argv...)
}

func (a *askCounter) ReadLink(ctx context.Context, p string) (string, error) {
	a.n.Add(1)
	return a.SSH.ReadLink(ctx, p)
}

func (a *askCounter) RealPath(ctx context.Context, p string) (string, error) {
	a.n.Add(1)
	return a.SSH.RealPath(ctx, p)
}
