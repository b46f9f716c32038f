package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// TestActorChecksInOneBatch: over SSH, an action's checks (worker.json,
// the worker's /proc entries) are answered by one batch's handles, with
// no question to the host beside it, and the act ends
// the answers: the kill's own check after SIGTERM reads the host anew and
// sees the worker gone.
func TestActorChecksInOneBatch(t *testing.T) {
	s := sshdtest.Start(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	root := t.TempDir()
	fillRunningRoot(t, root)
	h := p.dial(t)
	t.Cleanup(func() { h.Close() })
	c := Actor{H: h, Root: root}.checked(context.Background(), false)
	if c.pre == nil {
		t.Fatal("no batch for the checks")
	}
	pid, alive, err := c.runningWorker(context.Background())
	if err != nil || !alive || pid <= 0 {
		t.Fatalf("running worker: %d %v %v", pid, alive, err)
	}
	if pr, err := c.killable(context.Background(), pid); err != nil || pr == nil {
		t.Fatalf("killable: %v %v", pr, err)
	}
	if _, misses := c.pre.Counts(); misses > 0 {
		t.Fatalf("%d checks asked the host beside the batch: %v", misses, c.pre.Missed())
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
