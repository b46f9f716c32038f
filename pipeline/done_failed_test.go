package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// A night the worker ran to its end with a category it could not write
// (its raw_responses.jsonl a directory) is no "pipeline done": the worker
// ran every category and says which failed, the timeline has no
// pipeline_done, and the worker's exit names the failure.
func TestRunWithAFailedCategoryIsNotPipelineDone(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 200, "B2": 40}, 20)
	must(t, os.MkdirAll(filepath.Join(e.root, "prepared", "B2", parse.RawFile), 0o755))
	tl := timeline.New(500, filepath.Join(t.TempDir(), "h.jsonl"))
	e.w = NewWatcher(e.h, Options{Host: "e2e", Root: e.root, ServerURL: e.sim.URL()}, tl)
	ctx := context.Background()
	e.w.Poll(ctx)
	pid, err := e.act.Launch(ctx, nil)
	must(t, err)
	e.until("the worker ends", 90*time.Second, func(s snapshot.Snapshot) bool {
		return s.Worker.PID == pid && s.Worker.State == snapshot.WorkerExited && catByName(t, s, "B1").State == snapshot.StateDone
	})
	s := e.w.Poll(ctx) // one more: the timeline has folded the end
	if b2 := catByName(t, s, "B2"); b2.State != snapshot.StateFailed {
		t.Errorf("B2 %s, want failed", b2.State)
	}
	if !strings.Contains(s.Worker.Reason, "1 failed") || !strings.Contains(s.Worker.Reason, "B2") {
		t.Errorf("worker reason %q: it should say B2 failed", s.Worker.Reason)
	}
	var exited bool
	for _, ev := range s.Events {
		if ev.Kind == "pipeline_done" {
			t.Errorf("pipeline_done with a failed category: %+v", ev)
		}
		if ev.Kind == "worker_exited" && strings.Contains(ev.Text, "B2") {
			exited = true
		}
	}
	if !exited {
		t.Errorf("no worker_exited naming B2: %+v", s.Events)
	}
	log, _ := os.ReadFile(filepath.Join(e.root, "logs", "inference_all.log"))
	if strings.Contains(string(log), parse.FinishedLine) {
		t.Errorf("the worker log says %q with a failed category:\n%s", parse.FinishedLine, log)
	}
}
