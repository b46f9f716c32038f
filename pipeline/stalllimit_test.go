package pipeline

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// A long watch stalls a category at stall_after, as a one-shot status
// does (parse.StallLimit): a record every 4 minutes, then 12 quiet
// minutes, is stalled in both, with the same reason. Before, the watch
// stretched the limit to 5× the gap it had measured (20 minutes) and
// called running what a status opened beside it called stalled.
func TestLongWatchStallsAtTheSettingAsOneShot(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now().Truncate(time.Second)
	root, pid := writerRoot(t, c)
	start := c.now()
	workerOn(t, root, pid, c, start)
	o := Options{StallAfter: 10 * time.Minute}
	w := localWatcher(t, root, c, o)
	raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
	poll(w)
	for i := 0; i < 5; i++ { // a record every 4 minutes
		c.advance(4 * time.Minute)
		appendTo(t, raw, records("B2", i, 1))
		touch(t, raw, c.now())
		workerOn(t, root, pid, c, start)
		poll(w)
	}
	c.advance(12 * time.Minute)
	workerOn(t, root, pid, c, start)
	watched := catByName(t, poll(w), "B2")
	once := catByName(t, poll(localWatcher(t, root, c, o)), "B2")
	if watched.State != snapshot.StateStalled || once.State != snapshot.StateStalled || watched.Reason != once.Reason {
		t.Fatalf("12 quiet minutes after a record every 4: the watch says %s (%q), a one-shot %s (%q)", watched.State, watched.Reason, once.State, once.Reason)
	}
}
