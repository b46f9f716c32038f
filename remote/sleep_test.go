package remote

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// fakeClock has a wall and a monotonic reading the test moves.
type fakeClock struct{ wall, mono atomic.Int64 }

func (c *fakeClock) Wall() time.Time     { return time.Unix(0, c.wall.Load()) }
func (c *fakeClock) Mono() time.Duration { return time.Duration(c.mono.Load()) }
func (c *fakeClock) run(wall, mono time.Duration) {
	c.wall.Add(int64(wall))
	c.mono.Add(int64(mono))
}

func TestSleepDetector(t *testing.T) {
	t.Parallel()
	c := &fakeClock{}
	c.wall.Store(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC).UnixNano())
	d := newSleepDetector(c)
	for _, s := range []struct {
		name       string
		wall, mono time.Duration
		frozen     time.Duration
		slept      time.Duration // 0: no sleep
	}{
		{"a tick", time.Second, time.Second, frozenMin, 0},
		{"a loaded machine: a late tick", 20 * time.Second, 20 * time.Second, frozenMin, 0},
		{"a small clock step", 5 * time.Second, time.Second, frozenMin, 0},
		{"a night: the monotonic clock stopped", 7*time.Hour + 12*time.Minute + time.Second, time.Second, frozenMin, 7*time.Hour + 12*time.Minute},
		{"a tick minutes late (frozen)", 3 * time.Minute, 3 * time.Minute, frozenMin, 3 * time.Minute},
		{"a call after a long quiet: no freeze asked", 3 * time.Minute, 3 * time.Minute, 0, 0},
		{"the watchdog starts", 0, 0, -1, 0},
		{"a wall clock stepped back", -time.Hour, time.Second, frozenMin, 0},
	} {
		c.run(s.wall, s.mono)
		if s.frozen < 0 {
			d.startTicks()
			continue
		}
		slept, _, ok := d.check(s.frozen)
		if ok != (s.slept > 0) || ok && slept != s.slept {
			t.Errorf("%s: slept %s (%v), want %s", s.name, slept, ok, s.slept)
		}
	}
}

// skewClock is the system's clocks with a wall clock that can jump ahead.
type skewClock struct {
	start time.Time
	skew  atomic.Int64
}

func (c *skewClock) Wall() time.Time     { return time.Now().Round(0).Add(time.Duration(c.skew.Load())) }
func (c *skewClock) Mono() time.Duration { return time.Since(c.start) }

// With nobody calling, the watchdog's tick finds the sleep: the link is
// stale at once (calls fail fast), then back by a new link, the old one
// having lost its bytes to the black hole, with one sleep counted and no
// drop. OpenSSH's keepalive defaults (45 s) would not drop the old link
// before the deadline's end without the wake.
func TestWakeFoundByTick(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	p, o := viaProxy(t, s, "ConnectTimeout=3")
	clk := &skewClock{start: time.Now()}
	o.Clock = clk
	h := dial(t, o)
	p.SetMode(faultproxy.BlackHole)
	clk.skew.Add(int64(3 * time.Hour))
	waitPhase(t, h, Reconnecting, 30*time.Second)
	if _, err := h.Stat(context.Background(), "/"); err != ErrDisconnected {
		t.Errorf("a call after the wake: %v, want ErrDisconnected at once", err)
	}
	if st := h.State(); !st.Waking || st.Sleeps != 1 || st.SleptFor < 3*time.Hour-time.Second || st.SleptFor > 3*time.Hour+time.Second {
		t.Errorf("state after the wake %#v: one sleep of 3h, waking", st)
	}
	p.SetMode(faultproxy.Forward)
	waitPhase(t, h, Connected, 40*time.Second)
	if r, err := h.Exec(context.Background(), "echo", "ok"); err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("after the wake: %v", err)
	}
	if st := h.State(); st.Drops != 0 || st.Sleeps != 1 || st.Waking {
		t.Errorf("state after the link is back %+v: one sleep, no drop", st)
	}
}
