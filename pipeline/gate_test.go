package pipeline

import (
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// A root the old script wrote (python3's json.dumps), read by the
// laptop's own tally: each category's gate is Python's json module's
// count, and a category below the floor is a gate_below event, once.
func TestWatcherGateIsPythonsCount(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	digesttest.GateNight(t, root, 300)
	truth := digesttest.GateCount(t, root, digesttest.GateMaxLength, "auto")
	w := NewWatcher(localHost(), Options{Root: root, ServerURL: closedURL(t)}, nil)
	poll(w)
	s := poll(w)
	for _, c := range s.Categories {
		if d := digesttest.SameGate(c.Gate, truth[c.Name]); d != "" {
			t.Errorf("%s: %s (%+v, Python %+v)", c.Name, d, c.Gate, truth[c.Name])
		}
	}
	below := 0
	for _, e := range s.Events {
		if e.Kind == snapshot.EventGateBelow {
			below++
			if !strings.Contains(e.Text, "below 90%") {
				t.Errorf("event %q", e.Text)
			}
		}
	}
	if below != len(truth) { // both categories are below 90% (gate.py's mix)
		t.Errorf("%d gate_below events, want one a category: %v", below, s.Events)
	}
}
