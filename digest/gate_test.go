package digest

import (
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest/digesttest"
)

// The report's gate of a root the old script wrote (python3's json.dumps)
// is the gate Python's json module counts, category by category, and a
// category below the floor says when it fell there.
func TestDigestGateIsPythonsCount(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	digesttest.GateNight(t, root, 400)
	truth := digesttest.GateCount(t, root, digesttest.GateMaxLength, "auto")
	s, err := Build(Options{Root: root, Now: time.Now(), Loc: time.UTC, Since: time.Now().Add(-48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Categories) != len(truth) {
		t.Fatalf("%d categories, Python counts %d", len(s.Categories), len(truth))
	}
	for _, c := range s.Categories {
		if d := digesttest.SameGate(c.Gate, truth[c.Name]); d != "" {
			t.Errorf("%s: %s (%+v, Python %+v)", c.Name, d, c.Gate, truth[c.Name])
			continue
		}
		t.Logf("%s: %s (Python: %+v)", c.Name, c.Gate.Text(), truth[c.Name])
		if c.Gate.Below != (float64(c.Gate.Pass) < 0.9*float64(c.Gate.Examined)) {
			t.Errorf("%s: below %v at %s", c.Name, c.Gate.Below, c.Gate.Text())
		}
		if c.Gate.Below && c.GateBelowAt == nil {
			t.Errorf("%s: below the floor, with no time it fell", c.Name)
		}
	}
}
