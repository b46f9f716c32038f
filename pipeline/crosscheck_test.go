package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// TestCrossCheckSaysWhichSourceIsTrue: the log says 150/10000 and
// worker.json 150 while the file holds 400; the row names the file as the
// authority and why each other source lags, and each is one event.
func TestCrossCheckSaysWhichSourceIsTrue(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, _ := runningRoot(t, c)
	appendTo(t, filepath.Join(root, "prepared", "B2", "raw_responses.jsonl"), records("B2", 100, 300))
	logp := filepath.Join(root, "logs", "inference_all.log")
	write(t, logp, "Processing: B2 (LONG)\nB2: 10000 prompts\n150/10000 (0 err) 1.0 req/s avg_comp=200tok ETA=1h\n")
	old := c.now().Add(-40 * time.Minute)
	must(t, os.Chtimes(logp, old, old))
	st := readJSON(t, root)
	st.Categories[1].Done = 150
	st.UpdatedAt = c.now().Add(-3 * time.Minute)
	writeWorkerJSON(t, root, st)
	w := localWatcher(t, root, c, Options{})
	var v snapshot.Category
	for range 2 {
		v = catByName(t, poll(w), "B2")
		c.advance(2 * time.Second)
	}
	if v.Done != 400 || len(v.Checks) != 2 {
		t.Fatalf("done %d, checks %+v", v.Done, v.Checks)
	}
	for i, want := range []string{"log last written 40m", "worker.json last written 3m"} {
		chk := v.Checks[i]
		if chk.Says != 150 || chk.File != 400 || chk.Authority != "raw_responses.jsonl" || !strings.Contains(chk.Why, want) {
			t.Errorf("check %d: %+v, want why %q", i, chk, want)
		}
	}
	if evs := kinds(w.timeline.Recent(50), "cross_check"); len(evs) != 2 || !strings.Contains(evs[0].Text, "the file is authoritative") {
		t.Fatalf("events %+v", evs)
	}
}
