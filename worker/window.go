package worker

import (
	"fmt"
	"math"
)

// Signals are what the worker saw since the controller's last decision.
type Signals struct {
	Seconds     float64 // the interval
	Completions int     // answers written
	Tokens      int64   // their completion tokens
	Failures    int     // attempts that failed: aborts, timeouts, errors
	Yields      int     // attempts a shared gateway preempted for other traffic
	InFlight    int     // requests out at the end of the interval
	Server      Gauges  // the server's /metrics, else its log
}

// Gauges are the server's view: SGLang's or vLLM's /metrics, or the batch
// and retraction lines of its log (loggauges.go).
type Gauges struct {
	OK        bool
	FromLog   bool // read from the log: its retraction count is its own
	Running   float64
	Queued    float64
	Usage     float64 // 0–1
	Retracted float64 // counter: retractions (SGLang) or preemptions (vLLM)
	Gen       float64 // SGLang's gen_throughput (token/s), when GenOK
	GenOK     bool
}

// Controller decides how many requests of one class are in flight: the
// window. It starts small and grows while the server runs what it is
// sent with room to spare (before any answer: a LONG one takes minutes),
// doubling until the first sign that the server is full, then by an
// eighth; a server that holds none of what was sent (restarting) is no room. A full server
// (a queue, retractions) gets no more: the window keeps a small queue
// waiting so that the batch refills at once; a longer queue brings it back
// to what the server runs plus that queue; a retraction gives back what was
// retracted; failed attempts cut it by a third. The gauges come from
// /metrics, else from the server's log (loggauges.go); without either it
// climbs the delivered tokens/s instead: it keeps a step that paid at least
// 5 %, else goes back and holds, and probes again every reprobeEvery
// decisions. It never leaves
// [minWindow, max]. A fixed controller (--concurrency) never moves.
type Controller struct {
	window, max int
	fixed       bool
	reason      string
	slowStart   bool
	answered    bool    // an answer has arrived: growth may start
	cooldown    int     // decisions to hold after a cut
	longQueue   int     // decisions in a row that saw a long queue
	runPeak     float64 // the server's running batch, its recent peak (slow decay)
	gaugesSeen  bool    // the server has shown gauges: a missing reading is a hiccup, not a server without any
	decisions   int     // decisions taken
	good        int     // the window to remember (Good)
	grewFrom    int     // the window before the last growth past slow start (0: none pending)
	grewGen     float64 // the server's tokens/s then
	sinceGrow   int     // decisions since

	retracted0 float64 // the counter at the last decision (-1: not seen)
	fromLog    bool    // where retracted0 came from

	// hill climbing without gauges
	prevWindow  int
	prevRate    float64
	probing     bool
	holdFor     int
	acc         Signals // answers since the last step, for a rate worth comparing
	sinceChange int

	yieldSteps  int    // steps back for other traffic
	yieldReason string // the last one's reason
}

const (
	minWindow    = 4
	startWindow  = 8
	reprobeEvery = 10
	peakDecay    = 0.98 // per decision: the peak halves in ~35 decisions (3 minutes at 5 s)
)

// NewController is the adaptive default, capped at max.
func NewController(max int) *Controller {
	max = maxInt(max, minWindow)
	return &Controller{window: min(startWindow, max), max: max, slowStart: true, retracted0: -1, reason: "start"}
}

// NewControllerFrom starts at a remembered window (remember.go) instead
// of startWindow; it still doubles while the server has room.
func NewControllerFrom(max, start int) *Controller {
	c := NewController(max)
	c.window = min(maxInt(start, minWindow), c.max)
	c.reason = "start (remembered)"
	return c
}

// Good is the window at the last decision that found it in use with no
// failure or yield, past the first few decisions (0 before): the window to
// remember for the next start.
func (c *Controller) Good() int { return c.good }

// FixedController holds n (--concurrency or the class's setting).
func FixedController(n int) *Controller {
	return &Controller{window: n, max: n, fixed: true, reason: "fixed"}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Window is the number of requests to keep in flight.
func (c *Controller) Window() int { return c.window }

// Fixed reports a window set by hand.
func (c *Controller) Fixed() bool { return c.fixed }

// Reason is why the window last changed ("↑ queue empty; KV 71 %").
func (c *Controller) Reason() string { return c.reason }

// Yielded is how many times the window stepped back for other traffic
// behind a shared gateway, and the last such step's reason.
func (c *Controller) Yielded() (steps int, reason string) { return c.yieldSteps, c.yieldReason }

// Observe takes one interval's signals and moves the window; it reports
// whether the window changed.
func (c *Controller) Observe(s Signals) bool {
	if c.fixed {
		return false
	}
	old := c.window
	c.decisions++
	if c.decisions > 6 && s.Failures == 0 && s.Yields == 0 && s.InFlight >= c.window*3/4 {
		c.good = c.window
	}
	c.answered = c.answered || s.Completions > 0
	retracted := 0.0
	if s.Server.OK {
		if c.retracted0 >= 0 && s.Server.Retracted >= c.retracted0 && s.Server.FromLog == c.fromLog {
			retracted = s.Server.Retracted - c.retracted0
		}
		c.retracted0, c.fromLog = s.Server.Retracted, s.Server.FromLog
	}
	switch {
	case s.Yields > 0:
		// other traffic needs the gateway's slots: step back by what was
		// taken back (a quarter at most), and hold a while
		c.set(c.window-min(maxInt(s.Yields, 1), maxInt(c.window/4, 1)), fmt.Sprintf("↓ yielded to other traffic (%d)", s.Yields), s)
		c.yieldSteps, c.yieldReason = c.yieldSteps+1, c.reason
		c.slowStart, c.cooldown = false, 2
	case s.Failures > 0:
		c.set(c.window-maxInt(c.window/3, 1), fmt.Sprintf("↓ %d failed", s.Failures), s)
		c.slowStart, c.cooldown = false, 2
	case c.cooldown > 0:
		c.cooldown--
	case s.Server.OK:
		c.gaugesSeen = true
		c.gauged(s, retracted)
	case c.gaugesSeen:
		// hold: the gauges come back at the next decision, and tokens/s
		// over one interval would steer it elsewhere
	default:
		c.climb(s)
	}
	return c.window != old
}

// gauged steers by the server's gauges. Room (a short queue, KV headroom,
// the server running what it is sent) grows the window, doubling while
// nothing has said "full", from the first decision: no answer needs to have
// come back, since a LONG answer takes minutes. A queue is not by itself
// "full": SGLang's admission reserves room for the answers of those running
// (new_token_ratio, 0.7 at the start, decaying to 0.098 over 600 decode
// steps: schedule_policy.py PrefillAdder, scheduler.py), so a fresh server
// holds requests back while its KV is mostly free and takes more every few
// seconds. A queue while the running count still rises is that hold-back:
// the window holds. A full server is one whose running count stays flat
// while its queue stays: the window comes back to what it runs plus a small
// queue. Retractions give back what was retracted.
func (c *Controller) gauged(s Signals, retracted float64) {
	g := s.Server
	// admission takes more than ever lately: a new peak, not the noise of
	// a batch that swings by a few around a flat level
	rising := g.Running > c.runPeak*1.01+1
	// The server's batch swings: after a retraction SGLang admits nothing
	// until new_token_ratio decays, the batch shrinks, the queue grows, then
	// it admits a burst. What it runs at its recent peak is what the
	// window must feed, so cuts go there, not to the running count of the
	// moment, and the queue kept beside it is an eighth of that.
	c.runPeak = math.Max(g.Running, c.runPeak*peakDecay)
	target := math.Max(4, math.Ceil(c.runPeak/8))
	floor := int(c.runPeak + target)
	switch {
	// A cut never goes below that floor, whatever the window was: the
	// requests out stay out until they end (minutes for LONG answers), so
	// the same queue seen again must not cut again. One cut takes at most
	// a quarter, and a long queue must be seen twice in a row: a snapshot
	// can catch the batch between a burst of answers and the next prefill.
	case retracted > 0:
		// the retracted wait in the queue to be computed again: give back
		// as many, and hold a while
		c.slowStart, c.longQueue = false, 0
		c.cut(max(c.window-int(retracted), floor), fmt.Sprintf("↓ %.0f retracted", retracted), s)
		c.cooldown = 2
	case c.fell(g):
		// the last step up only slowed the server down: back, and hold
		c.cut(c.grewFrom, fmt.Sprintf("↓ tokens/s fell from %.0f to %.0f", c.grewGen, g.Gen), s)
		c.grewFrom, c.cooldown = 0, 2
	case g.Queued > 2*target && !rising:
		// running flat while the queue stays: full
		c.slowStart = false
		if c.longQueue++; c.longQueue >= 2 {
			c.cut(floor, fmt.Sprintf("↓ queue %.0f waiting, running flat at %.0f", g.Queued, g.Running), s)
		}
	case g.Queued > target/2:
		// a queue, and the server still takes more: admission holding back
		// for the answers' room, which it frees as new_token_ratio decays
		c.longQueue = 0
		if rising {
			c.note(fmt.Sprintf("= admission holding back: %.0f waiting, running rising to %.0f", g.Queued, g.Running), s)
		}
	case g.Usage > 0.92:
		c.longQueue = 0 // the KV pool is nearly full: no more room, whatever the queue
	case c.slowStart && g.Running+g.Queued < 0.5*float64(s.InFlight):
		// doubling, but the server has not taken what was sent yet (in
		// transit, behind a gateway, a tokenizer): doubling again would
		// only pile up out of sight. Past slow start the requests between
		// an answer and the next send count here too, so it is not asked.
		c.longQueue = 0
		c.note(fmt.Sprintf("= the server holds %.0f of %d sent", g.Running+g.Queued, s.InFlight), s)
	case g.Running+g.Queued < 1 && s.InFlight > 0:
		// the server holds none of what was sent: it is restarting, or
		// just restarted and has not been reached yet. Its empty gauges
		// are no room: growing here sent a restarted server twice the
		// window at once (TestAdaptiveWindowFollowsRestartAndHalvedCapacity).
		c.longQueue = 0
		c.note(fmt.Sprintf("= the server holds 0 of %d sent", s.InFlight), s)
	case c.answered || g.Running > 0: // the server runs what it is sent
		c.longQueue = 0
		if s.InFlight < c.window*3/4 {
			return // the window is not used (the prompts run out): no reason to grow
		}
		step := maxInt(c.window/8, 1)
		why := "↑ room"
		if c.slowStart {
			step, why = c.window, "↑↑ room"
		} else if g.GenOK {
			c.grewFrom, c.grewGen, c.sinceGrow = c.window, g.Gen, 0
		}
		c.set(c.window+step, fmt.Sprintf("%s: queue %.0f, running %.0f", why, g.Queued, g.Running), s)
	}
}

// fell reports the server's tokens/s down by a tenth or more within three
// decisions of a step up past slow start, with a queue: more in flight
// bought nothing but a longer queue and a slower batch.
func (c *Controller) fell(g Gauges) bool {
	if c.grewFrom == 0 || !g.GenOK {
		return false
	}
	if c.sinceGrow++; c.sinceGrow > 3 {
		c.grewFrom = 0
		return false
	}
	return g.Queued > 0 && g.Gen < 0.9*c.grewGen
}

// note changes the reason, not the window.
func (c *Controller) note(why string, s Signals) {
	if s.Server.OK {
		why += fmt.Sprintf("; KV %.0f %%", 100*s.Server.Usage)
	}
	c.reason = why
}

// SlowStart reports the window still doubling: decisions come five times
// as often then (adapt.go), so a large server is reached in seconds.
func (c *Controller) SlowStart() bool { return !c.fixed && c.slowStart }

// climb is hill climbing on delivered tokens/s when the server shows no
// gauges: compare the rate of each window over enough answers.
func (c *Controller) climb(s Signals) {
	c.acc.Seconds += s.Seconds
	c.acc.Completions += s.Completions
	c.acc.Tokens += s.Tokens
	if c.acc.Completions < maxInt(4, c.window/4) || c.acc.Seconds <= 0 {
		return // not enough answers to judge this window
	}
	rate := float64(c.acc.Tokens) / c.acc.Seconds
	c.acc = Signals{}
	c.sinceChange++
	switch {
	case c.probing && rate < c.prevRate*1.05:
		// the step did not pay: back, and hold
		w := c.prevWindow
		c.probing, c.slowStart, c.holdFor = false, false, reprobeEvery
		c.set(w, fmt.Sprintf("↓ plateau %.0f tok/s", c.prevRate), s)
		return
	case c.holdFor > 0:
		c.holdFor--
		c.prevRate = rate
		return
	case s.InFlight < c.window*3/4:
		return
	}
	c.prevWindow, c.prevRate, c.probing = c.window, rate, true
	step := maxInt(c.window/8, 1)
	why := "↑ probe"
	if c.slowStart {
		step, why = c.window, "↑ tokens/s rising"
	}
	c.set(c.window+step, fmt.Sprintf("%s %.0f tok/s", why, rate), s)
}

// cut lowers the window toward w, by a quarter at most.
func (c *Controller) cut(w int, why string, s Signals) {
	if w < c.window {
		c.set(max(w, c.window*3/4), why, s)
	}
}

// set moves the window within bounds and records why.
func (c *Controller) set(w int, why string, s Signals) {
	w = min(maxInt(w, minWindow), c.max)
	if w == c.window {
		return
	}
	if s.Server.OK {
		why += fmt.Sprintf("; KV %.0f %%", 100*s.Server.Usage)
	}
	c.window, c.reason = w, why
	c.sinceChange = 0
}
