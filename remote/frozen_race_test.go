package remote

import (
	"testing"
	"time"
)

// TestFrozenTickSeenAfterAnEarlierReader: a tick minutes late (a stopped
// process, or a platform whose monotonic clock runs in sleep) is a sleep
// even when a host call reads the clocks before the watchdog does (found
// by an adversarial trial: session() took the reading and the watchdog
// then saw a one-second gap).
func TestFrozenTickSeenAfterAnEarlierReader(t *testing.T) {
	t.Parallel()
	c := &fakeClock{}
	d := newSleepDetector(c)
	c.run(3*time.Minute, 3*time.Minute) // frozen 3 min: both clocks ran
	if _, _, ok := d.check(0); ok {     // a poll's session() reads first: no wall-mono gap
		t.Fatal("a freeze seen by a reader that does not check for freezes")
	}
	c.run(time.Second, time.Second)
	if slept, _, ok := d.check(frozenMin); !ok || slept < 3*time.Minute {
		t.Fatalf("the watchdog's tick after a 3-minute freeze: slept %s, %v", slept, ok)
	}
	c.run(time.Second, time.Second)
	if _, _, ok := d.check(frozenMin); ok {
		t.Fatal("the next tick saw the freeze again")
	}
}
