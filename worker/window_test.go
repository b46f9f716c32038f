package worker

import (
	"strings"
	"testing"
)

// traceServer is a trace source: a server that runs up to capacity requests
// and queues the rest, delivering perReq tok/s for each running one.
type traceServer struct {
	capacity int
	perReq   float64
}

func (f traceServer) signals(window int, gauges bool) Signals {
	running := min(window, f.capacity)
	s := Signals{Seconds: 2, InFlight: window, Completions: running / 4, Tokens: int64(float64(running) * f.perReq * 2)}
	if gauges {
		s.Server = Gauges{OK: true, Running: float64(running), Queued: float64(window - running), Usage: float64(running) / float64(f.capacity)}
	}
	return s
}

func TestControllerFillsTheServerAndHolds(t *testing.T) {
	t.Parallel()
	c := NewController(1024)
	if c.Window() != startWindow {
		t.Fatalf("starts at %d", c.Window())
	}
	// nothing running on the server and no answer: no growth
	if c.Observe(Signals{Seconds: 2, InFlight: c.Window(), Server: Gauges{OK: true}}) {
		t.Errorf("grew with nothing running: %d", c.Window())
	}
	// no answer yet (LONG ones decode for minutes), but the server runs all
	// it is sent with room to spare: it doubles
	if !c.Observe(Signals{Seconds: 2, InFlight: c.Window(), Server: Gauges{OK: true, Running: 8, Usage: 0.1}}) || c.Window() != 2*startWindow {
		t.Errorf("did not double before the first answer: %d", c.Window())
	}
	srv := traceServer{capacity: 200, perReq: 10}
	var trace []int
	for range 40 {
		c.Observe(srv.signals(c.Window(), true))
		trace = append(trace, c.Window())
	}
	final := c.Window()
	if final < 200 || final > 240 {
		t.Errorf("window %d for a server that runs 200 (trace %v)", final, trace)
	}
	for _, w := range trace[len(trace)-10:] {
		if w != final {
			t.Errorf("did not hold on a full server: %v", trace)
			break
		}
	}
	// slow start overshoots once, then gives back what waits
	if r := c.Reason(); !strings.HasPrefix(r, "↑ room") && !strings.HasPrefix(r, "↓ queue") {
		t.Errorf("reason %q", r)
	}
}

func TestControllerFollowsCapacityDown(t *testing.T) {
	t.Parallel()
	c := NewController(1024)
	for range 40 {
		c.Observe(traceServer{capacity: 200, perReq: 10}.signals(c.Window(), true))
	}
	for range 60 { // five minutes at one decision every 5 s
		c.Observe(traceServer{capacity: 100, perReq: 10}.signals(c.Window(), true))
	}
	if w := c.Window(); w < 100 || w > 130 { // 100 running and a queue of an eighth
		t.Errorf("capacity halved to 100: window %d", w)
	}
	if !strings.HasPrefix(c.Reason(), "↓ queue") {
		t.Errorf("reason %q", c.Reason())
	}
}

func TestControllerBacksOffOnRetractionsAndFailures(t *testing.T) {
	t.Parallel()
	c := NewController(1024)
	for range 40 {
		c.Observe(traceServer{capacity: 200, perReq: 10}.signals(c.Window(), true))
	}
	before := c.Window()
	s := traceServer{capacity: 150, perReq: 10}.signals(c.Window(), true)
	s.Server.Queued = 3 // retracted back to the queue, little else waiting
	c.Observe(s)        // the counter's first reading: a baseline
	s.Server.Retracted = 12
	c.Observe(s)
	if c.Window() >= before || c.Window() < 150 || !strings.Contains(c.Reason(), "12 retracted") {
		t.Errorf("12 retracted at 150 running: %d → %d (%s)", before, c.Window(), c.Reason())
	}
	w := c.Window()
	c.Observe(Signals{Seconds: 2, Failures: 3, InFlight: w})
	if c.Window() != w-w/3 || !strings.Contains(c.Reason(), "3 failed") {
		t.Errorf("3 failed attempts: %d → %d (%s)", w, c.Window(), c.Reason())
	}
	// after a cut it holds for two decisions, then grows again
	w = c.Window()
	for range 2 {
		c.Observe(traceServer{capacity: 1000, perReq: 10}.signals(c.Window(), true))
	}
	if c.Window() != w {
		t.Errorf("no cooldown: %d → %d", w, c.Window())
	}
	c.Observe(traceServer{capacity: 1000, perReq: 10}.signals(c.Window(), true))
	if c.Window() <= w {
		t.Errorf("did not grow again after the cooldown: %d", c.Window())
	}
}

func TestControllerNeverPassesItsCap(t *testing.T) {
	t.Parallel()
	c := NewController(50)
	for range 40 {
		c.Observe(traceServer{capacity: 1000, perReq: 10}.signals(c.Window(), true))
		if c.Window() > 50 {
			t.Fatalf("window %d past --max-concurrency 50", c.Window())
		}
	}
	if c.Window() != 50 {
		t.Errorf("window %d, want the cap", c.Window())
	}
	f := FixedController(150)
	for range 5 {
		if f.Observe(Signals{Seconds: 2, Failures: 9, InFlight: 150}) || f.Window() != 150 {
			t.Fatalf("a fixed window moved: %d", f.Window())
		}
	}
}

// Without /metrics: climb tokens/s, hold on the plateau, probe again.
func TestControllerClimbsThroughputWithoutGauges(t *testing.T) {
	t.Parallel()
	c := NewController(1024)
	srv := traceServer{capacity: 100, perReq: 10}
	var trace []int
	for range 120 {
		c.Observe(srv.signals(c.Window(), false))
		trace = append(trace, c.Window())
	}
	final := c.Window()
	if final < 100 || final > 130 {
		t.Errorf("plateau at 100: window %d (trace %v)", final, trace)
	}
	probes := 0
	for i := 60; i < len(trace); i++ {
		if trace[i] > trace[i-1] {
			probes++
		}
	}
	if probes == 0 {
		t.Errorf("never probed again on the plateau: %v", trace[60:])
	}
	if !strings.Contains(c.Reason(), "tok/s") {
		t.Errorf("reason %q", c.Reason())
	}
}

// TestControllerStepsBackOnYield: preemptions by a shared gateway step the
// window back by what was yielded (a quarter at most), say why, and hold
// for two decisions; they are not failures.
func TestControllerStepsBackOnYield(t *testing.T) {
	t.Parallel()
	c := NewController(1024)
	srv := traceServer{capacity: 200, perReq: 10}
	for range 20 {
		c.Observe(srv.signals(c.Window(), true))
	}
	w := c.Window()
	s := srv.signals(w, true)
	s.Yields = 6
	if !c.Observe(s) || c.Window() != w-6 {
		t.Fatalf("6 yields at window %d: window %d", w, c.Window())
	}
	if !strings.Contains(c.Reason(), "yielded to other traffic (6)") {
		t.Errorf("reason %q", c.Reason())
	}
	for range 2 {
		if c.Observe(srv.signals(c.Window(), true)) {
			t.Errorf("moved during the hold after a yield: %d %s", c.Window(), c.Reason())
		}
	}
	s = srv.signals(c.Window(), true)
	s.Yields = 10000
	before := c.Window()
	c.Observe(s)
	if c.Window() != before-before/4 {
		t.Errorf("a flood of yields at %d: window %d, want a quarter less", before, c.Window())
	}
	if FixedController(150).Observe(Signals{Yields: 5}) {
		t.Error("a fixed window moved")
	}
}

// TestControllerStepsBackWhenTokensFall: past slow start, a step up after
// which the server's tokens/s fall by a tenth, with a queue, is undone.
func TestControllerStepsBackWhenTokensFall(t *testing.T) {
	t.Parallel()
	c := NewController(1024)
	c.slowStart = false
	g := Gauges{OK: true, Running: 100, Usage: 0.5, Gen: 1000, GenOK: true}
	if !c.Observe(Signals{Seconds: 5, InFlight: c.Window(), Completions: 10, Server: g}) {
		t.Fatalf("no step up with room: %s", c.Reason())
	}
	from, up := startWindow, c.Window()
	g.Queued, g.Gen = 3, 850
	c.Observe(Signals{Seconds: 5, InFlight: up, Completions: 10, Server: g})
	if c.Window() != from || !strings.Contains(c.Reason(), "tokens/s fell from 1000 to 850") {
		t.Errorf("tokens/s fell after %d → %d: window %d (%s)", from, up, c.Window(), c.Reason())
	}
	// the same fall without a pending step up moves nothing
	c2 := NewController(1024)
	c2.slowStart = false
	g.Queued = 3
	if c2.Observe(Signals{Seconds: 5, InFlight: c2.Window(), Server: g}) && strings.Contains(c2.Reason(), "fell") {
		t.Errorf("cut with no step up: %s", c2.Reason())
	}
}

// A server that restarted shows empty gauges while the worker's requests
// wait for it: that is no room. The window takes the failures' cut and
// holds until the server runs what it is sent again, then grows.
func TestControllerHoldsWhileARestartedServerHoldsNothing(t *testing.T) {
	t.Parallel()
	c := NewController(1024)
	srv := traceServer{capacity: 80, perReq: 10}
	for range 40 {
		c.Observe(srv.signals(c.Window(), true))
	}
	before := c.Window()
	c.Observe(Signals{Seconds: 2, InFlight: before, Failures: before / 2}) // the restart cuts what was out
	cut := c.Window()
	if cut >= before {
		t.Fatalf("no cut on the restart's failures: %d → %d", before, cut)
	}
	for i := range 10 { // the cooldown, then the fresh server's empty gauges
		c.Observe(Signals{Seconds: 2, InFlight: cut, Server: Gauges{OK: true}})
		if c.Window() != cut {
			t.Fatalf("decision %d: grew to %d on a server that holds none of %d sent (%s)", i, c.Window(), cut, c.Reason())
		}
	}
	if r := c.Reason(); !strings.HasPrefix(r, "= the server holds 0 of") {
		t.Errorf("reason %q", r)
	}
	for range 20 { // the server runs again
		c.Observe(srv.signals(c.Window(), true))
	}
	if c.Window() < before*8/10 {
		t.Errorf("did not grow back: %d, was %d", c.Window(), before)
	}
}
