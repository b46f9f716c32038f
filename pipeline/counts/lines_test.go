package counts

import (
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The categories fold the lines the worker writes, made by parse's Format
// functions and constants, into what they say of a category: its class,
// target, resume figures, progress and skip.
func TestFoldsTheLinesTheWorkerWrites(t *testing.T) {
	t.Parallel()
	k := newSet(t.TempDir())
	c := k.cat("B1")
	now := time.Now()
	cur := ""
	fold := func(line string) {
		l := parse.ParseWorkerLine(line)
		k.FoldLogLine(l, cur, false, now, true, true)
		if l.Kind == parse.WProcessing {
			cur = l.Category
		}
	}

	fold(parse.FormatProcessing("B1", "LONG"))
	if c.class != "LONG" {
		t.Fatalf("processing: class %q", c.class)
	}
	fold(parse.FormatResume("B1", 100, 40, 60))
	if c.logTarget != 100 || c.logResumed != 40 || c.logToGo != 60 {
		t.Fatalf("resume: %d %d %d", c.logTarget, c.logResumed, c.logToGo)
	}
	fold(parse.FormatRunning(60, 16, 2048))
	fold(parse.FormatProgress(50, 100, 1, 2.0, 200, time.Minute, true))
	if p := c.logProgress; p.Kind != parse.WProgress || p.Done != 50 {
		t.Fatalf("progress: %+v", p)
	}
	fold(parse.FormatSkip("B1", 100))
	if !c.logSkipped {
		t.Fatal("skip")
	}
}
