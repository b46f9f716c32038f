package events

import (
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// A poll that read a category's file just before the worker's last append
// and worker.json just after it sees the category done one record short:
// its category_done and the pipeline_done wait a poll for the count. A
// file that stays short (rewritten since) is done as it reads at the poll
// after.
func TestCategoryDoneWaitsAPollForWorkerJSONsCount(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	wjson := &parse.WorkerState{State: "exited", Categories: []parse.CategoryState{{Name: "B2", Done: 160, Target: 160}}}
	poll := func(e *Recorder, done int64) {
		e.FoldDone(DoneInputs{
			Cats:   []snapshot.Category{{Name: "B2", Class: "SHORT", State: snapshot.StateDone, Done: done, Target: 160}},
			Mtimes: []time.Time{now}, ManOK: true, Worker: snapshot.Worker{State: snapshot.WorkerExited}, WJSON: wjson,
		}, now)
	}
	texts := func(tl *timeline.Timeline) string {
		var s []string
		for _, ev := range tl.Recent(10) {
			s = append(s, ev.Text)
		}
		return strings.Join(s, "|")
	}

	tl := timeline.New(10, "")
	e := New(tl)
	poll(e, 159)
	if got := texts(tl); got != "" {
		t.Fatalf("one record short of worker.json's count, recorded at once: %q", got)
	}
	poll(e, 160)
	poll(e, 160)
	if got := texts(tl); got != "B2 done: 160 records|pipeline done: 160 records" {
		t.Fatalf("the poll after: %q", got)
	}

	tl = timeline.New(10, "")
	e = New(tl)
	poll(e, 150)
	poll(e, 150)
	if got := texts(tl); got != "B2 done: 150 records|pipeline done: 150 records" {
		t.Fatalf("a file that stays short: %q", got)
	}
}
