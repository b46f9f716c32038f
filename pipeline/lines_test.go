package pipeline

import (
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// The watcher folds the lines the worker writes, made by parse's Format
// functions and constants, into the state they mean: the same functions on
// both sides, so a reworded line changes both or neither. The worker's
// part's lines (a wait, a kill marker) are its own test
// (pipeline/liveness).
func TestWatcherFoldsTheLinesTheWorkerWrites(t *testing.T) {
	t.Parallel()
	w := NewWatcher(remote.Local{}, Options{Root: t.TempDir()}, nil)
	w.cnt.cat("B1")
	now := time.Now()
	fold := func(line string) { w.foldWorkerLine(parse.ParseWorkerLine(line), now, now, true) }

	fold(parse.FormatProcessing("B1", "LONG"))
	if w.log.current != "B1" || w.cnt.cats["B1"].class != "LONG" {
		t.Fatalf("processing: current %q class %q", w.log.current, w.cnt.cats["B1"].class)
	}
	fold(parse.FormatResume("B1", 100, 40, 60))
	if c := w.cnt.cats["B1"]; c.logTarget != 100 || c.logResumed != 40 || c.logToGo != 60 {
		t.Fatalf("resume: %d %d %d", c.logTarget, c.logResumed, c.logToGo)
	}
	fold(parse.FormatRunning(60, 16, 2048))
	fold(parse.FormatProgress(50, 100, 1, 2.0, 200, time.Minute, true))
	if p := w.cnt.cats["B1"].logProgress; p.Kind != parse.WProgress || p.Done != 50 {
		t.Fatalf("progress: %+v", p)
	}
	fold(parse.FormatSkip("B1", 100))
	if !w.cnt.cats["B1"].logSkipped {
		t.Fatal("skip")
	}
	fold(parse.FinishedLine)
	if !w.log.finished {
		t.Fatal("the finished line did not finish the log")
	}
}

// The kill action writes the marker parse.FormatKill makes.
func TestKillArgvWritesTheMarker(t *testing.T) {
	t.Parallel()
	argv := KillArgv(4242, 99, 30*time.Second, "/r/logs/inference_all.log", "/r/run/synthwatch-kill")
	if got := argv[len(argv)-1]; got != parse.FormatKill(4242, 30*time.Second) {
		t.Fatalf("marker argument %q", got)
	}
}
