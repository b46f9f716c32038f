package pipeline

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// The watcher folds the lines the worker writes, made by parse's Format
// functions and constants, into the state they mean: the same functions on
// both sides, so a reworded line changes both or neither. The worker's
// part's lines (a wait, a kill marker) are its own test
// (pipeline/liveness), and so are the categories' (pipeline/counts); here
// the log's, and that a line reaches the category it names.
func TestWatcherFoldsTheLinesTheWorkerWrites(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", parse.RawFile), records("B1", 0, 3))
	w := NewWatcher(remote.Local{}, Options{Root: root, ServerURL: closedURL(t)}, nil)
	poll(w) // finds B1
	now := time.Now()
	fold := func(line string) { w.foldWorkerLine(parse.ParseWorkerLine(line), now, now, true) }

	fold(parse.FormatProcessing("B1", "LONG"))
	if cur := w.log.Says().Current; cur != "B1" {
		t.Fatalf("processing: current %q", cur)
	}
	fold(parse.FormatResume("B1", 100, 40, 60))
	fold(parse.FormatRunning(60, 16, 2048))
	fold(parse.FormatProgress(50, 100, 1, 2.0, 200, time.Minute, true))
	fold(parse.FinishedLine)
	if !w.log.Says().Finished {
		t.Fatal("the finished line did not finish the log")
	}
	if b1 := catByName(t, poll(w), "B1"); b1.Class != "LONG" || b1.Target != 100 {
		t.Fatalf("the category the lines name: class %q target %d, want LONG and 100", b1.Class, b1.Target)
	}
}
