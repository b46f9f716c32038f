package pipeline

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// A worker that started and ended between two polls leaves a start and an
// exit; a pid change leaves an exit of the old pid and a start of the new.
func TestWorkerEventsBetweenPolls(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, pid := runningRoot(t, c)
	w := localWatcher(t, root, c, Options{})
	s := poll(w)
	if s.Worker.State != snapshot.WorkerRunning || s.Worker.PID != pid {
		t.Fatalf("start: %+v", s.Worker)
	}
	other := fakeWorker(t, root)
	writeWorkerJSON(t, root, parse.WorkerState{PID: other, State: parse.WorkerRunning, Category: "B2", StartedAt: c.now(), UpdatedAt: c.now()})
	c.advance(2 * time.Second)
	s = poll(w)
	if s.Worker.PID != other || !hasEvent(s, "worker_exited", fmt.Sprintf("worker pid %d ended", pid)) ||
		!hasEvent(s, "worker_started", fmt.Sprintf("pid %d, after pid %d", other, pid)) {
		t.Fatalf("pid change: %+v %+v", s.Worker, s.Events)
	}
	// other dies; 999999 runs and ends between two polls
	must(t, syscall.Kill(other, syscall.SIGKILL))
	time.Sleep(100 * time.Millisecond) // a zombie until reaped: gone all the same
	writeWorkerJSON(t, root, parse.WorkerState{PID: 999999, State: parse.WorkerDone, StartedAt: c.now(), UpdatedAt: c.now().Add(time.Second)})
	c.advance(2 * time.Second)
	s = poll(w)
	if !hasEvent(s, "worker_started", "pid 999999") || !hasEvent(s, "worker_exited", "pid 999999") || !hasEvent(s, "worker_exited", fmt.Sprintf("pid %d", other)) {
		t.Fatalf("between polls: %+v", s.Events)
	}
}

func hasEvent(s snapshot.Snapshot, kind, text string) bool {
	for _, e := range s.Events {
		if e.Kind == kind && strings.Contains(e.Text, text) {
			return true
		}
	}
	return false
}
