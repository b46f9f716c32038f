package worklog

import (
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The log folds the lines the worker writes, made by parse's Format
// functions and constants, into what it says of the job: the category
// worked on and the one before, whether only the header's lines came
// since it (and when it was read as written), the job finished.
func TestFoldsTheLinesTheWorkerWrites(t *testing.T) {
	t.Parallel()
	lg := New(t.TempDir()+"/inference_all.log", 10, false)
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	fold := func(line string, watched bool) { lg.Fold(parse.ParseWorkerLine(line), now, watched) }

	fold(parse.FormatProcessing("B1", "LONG"), false) // history: its time unknown
	fold(parse.FormatResume("B1", 100, 40, 60), false)
	if s := lg.Says(); s.Current != "B1" || s.Prev != "" || !s.HeaderOnly || !s.HeaderAt.IsZero() {
		t.Fatalf("after B1's header: %+v", s)
	}
	fold(parse.FormatProgress(50, 100, 1, 2.0, 200, time.Minute, true), false)
	if lg.Says().HeaderOnly {
		t.Fatal("a progress line after the header: still header only")
	}
	fold(parse.FormatProcessing("B2", "SHORT"), true) // read as it was written
	if s := lg.Says(); s.Current != "B2" || s.Prev != "B1" || !s.HeaderOnly || !s.HeaderAt.Equal(now) {
		t.Fatalf("after B2's header, watched: %+v", s)
	}
	fold(parse.FinishedLine, true)
	if !lg.Says().Finished {
		t.Fatal("the finished line did not finish the log")
	}
	lg.Seen(now)
	if !lg.Says().LastLine.Equal(now) {
		t.Fatalf("last line %v, want %v", lg.Says().LastLine, now)
	}
}
