package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Clock reads the two clocks that tell a sleep: the wall clock runs on while
// the machine sleeps, the monotonic one stops (Linux, macOS, Windows alike).
// Tests inject one to sleep without sleeping.
type Clock interface {
	Wall() time.Time     // the wall clock, without a monotonic reading
	Mono() time.Duration // a monotonic reading since any fixed start
}

// SystemClock is the machine's clocks.
func SystemClock() Clock { return sysClock{start: time.Now()} }

type sysClock struct{ start time.Time }

func (c sysClock) Wall() time.Time     { return time.Now().Round(0) }
func (c sysClock) Mono() time.Duration { return time.Since(c.start) }

const (
	// sleepMin: a shorter gap is a loaded machine or a clock step, and
	// keepalives cover it anyway.
	sleepMin = 10 * time.Second
	// frozenMin: the watchdog reads the clocks every second, so a minute
	// between two of its readings is a freeze (a platform whose monotonic
	// clock runs in sleep, a stopped process), a sleep all the same.
	frozenMin = time.Minute
	// wakeProbe bounds the old link's keepalive after a wake: an RTT-ish
	// budget, while new links are dialled beside it anyway.
	wakeProbe = 3 * time.Second
	// After a wake, dials start at once and then at gaps growing from
	// wakeGap to wakeMaxGap, at most wakeInflight at a time (well under
	// sshd's MaxStartups), for wakeWindow; then the ordinary backoff.
	wakeGap      = 250 * time.Millisecond
	wakeMaxGap   = 2 * time.Second
	wakeInflight = 4
	wakeWindow   = time.Minute
)

// sleepDetector compares the clocks between two readings, whoever takes
// them: the watchdog's tick or any operation on the host.
type sleepDetector struct {
	mu    sync.Mutex
	clock Clock
	wall  time.Time
	mono  time.Duration
	tick  time.Duration // the monotonic reading of the last frozen check: its own, so a call in between hides no late tick
}

func newSleepDetector(c Clock) *sleepDetector {
	m := c.Mono()
	return &sleepDetector{clock: c, wall: c.Wall(), mono: m, tick: m}
}

// check reads the clocks and says how long the machine slept since the
// last reading, if it did. frozen (0: off) also counts a monotonic gap
// longer than it: only a caller that reads every second may ask that.
func (d *sleepDetector) check(frozen time.Duration) (time.Duration, time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	wall, mono := d.clock.Wall(), d.clock.Mono()
	wallGap, monoGap := wall.Sub(d.wall), mono-d.mono
	d.wall, d.mono = wall, mono
	slept := wallGap - monoGap
	if frozen > 0 {
		if tickGap := mono - d.tick; tickGap > frozen {
			slept = max(slept, tickGap)
		}
		d.tick = mono
	}
	return slept, wall, slept >= sleepMin
}

// startTicks begins the frozen checks' readings afresh: the watchdog calls
// it when it starts, so the time no watchdog ran (no link) is no freeze.
func (d *sleepDetector) startTicks() {
	d.mu.Lock()
	d.tick = d.clock.Mono()
	d.mu.Unlock()
}

// checkSleep notes a sleep found by a reading of the clocks.
func (s *SSH) checkSleep(frozen time.Duration) bool {
	slept, at, ok := s.sleep.check(frozen)
	if ok {
		s.noteWake(slept, at)
	}
	return ok
}

// noteWake marks everything stale at once: the link is not trusted (every
// call fails fast) until a probe or a new link proves it, and the
// supervisor is told to find one now.
func (s *SSH) noteWake(slept time.Duration, at time.Time) {
	s.mu.Lock()
	s.asleep = true
	s.mu.Unlock()
	s.setState(func(st *ConnState) {
		st.Phase, st.Attempt, st.NextTry = Reconnecting, 0, time.Time{}
		st.Err, st.Cause = fmt.Sprintf("woke from a sleep of %s: checking the link", slept.Round(time.Second)), nil
		st.Slept, st.Waking, st.Sleeps, st.SleptFor, st.WokeAt = true, true, st.Sleeps+1, slept, at
	})
	select {
	case s.woke <- struct{}{}:
	default:
	}
}

var errClosed = errors.New("closed")

// wake finds a live link after a sleep as soon as the network allows. The
// old link (nil: none) may have survived a short sleep, so it is probed; new
// links are dialled beside it, the first at once, more at growing gaps: one
// begun before the network was back may never finish, and waiting for its
// timeout is the delay this avoids. The first to answer wins and the rest
// are closed. After wakeWindow it gives up with the last error, and the
// ordinary backoff takes over.
func (s *SSH) wake(old *session) (*session, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		sess  *session
		err   error
		probe bool
	}
	results := make(chan result)
	deliver := func(r result) {
		select {
		case results <- r:
		case <-ctx.Done():
			if r.sess != nil && !r.probe {
				s.retire(r.sess) // a dial that finished after the race was won
			}
		}
	}
	inflight := 0 // dials, not the probe: the cap is for new connections
	if old != nil {
		budget, probed := max(wakeProbe, 4*s.State().RTT), old
		go func() {
			_, err := withTimeout(ctx, budget, func() (struct{}, error) {
				_, _, err := probed.link.client.SendRequest("keepalive@openssh.com", true, nil)
				return struct{}{}, err
			})
			deliver(result{sess: probed, err: err, probe: true})
		}()
	}
	attempts := 0
	dial := func() {
		inflight++
		attempts++
		go func() {
			sess, err := s.connect(ctx)
			deliver(result{sess: sess, err: err})
		}()
	}
	drop := func() {
		if old != nil {
			s.retire(old)
			old = nil
		}
	}
	var lastErr error
	gap := wakeGap
	next := time.NewTimer(0)
	defer next.Stop()
	window := time.NewTimer(wakeWindow)
	defer window.Stop()
	for {
		select {
		case <-s.closed:
			drop()
			return nil, errClosed
		case <-s.kick:
			if inflight < wakeInflight {
				dial()
			}
		case <-next.C:
			if inflight < wakeInflight {
				dial()
			}
			next.Reset(gap)
			when := time.Now().Add(gap)
			gap = min(2*gap, wakeMaxGap)
			s.setState(func(st *ConnState) { st.NextTry, st.Attempt = when, attempts })
		case r := <-results:
			if !r.probe {
				inflight--
			}
			switch {
			case r.probe && r.err == nil:
				return r.sess, nil
			case r.probe:
				drop() // dead: free its socket now
			case r.err == nil:
				drop()
				return r.sess, nil
			case Fatal(r.err):
				drop()
				return nil, r.err
			default:
				lastErr = r.err
				s.setState(func(st *ConnState) { st.Err, st.Cause = r.err.Error(), r.err })
			}
		case <-window.C:
			drop()
			if lastErr == nil {
				lastErr = fmt.Errorf("no link within %s of the wake", wakeWindow)
			}
			return nil, lastErr
		}
	}
}
