package worker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// newWindow is the category's controller: fixed when the flag or the class
// says, else adaptive up to c.Concurrency.
func newWindow(c Category) *Controller {
	if c.Adaptive {
		return NewController(c.Concurrency)
	}
	return FixedController(c.Concurrency)
}

// adaptLoop feeds the category's controller every cfg.AdaptEvery with what
// the run delivered and what the server's /metrics or log say, until ctx ends.
// A fixed window is left alone.
func (r *catRun) adaptLoop(ctx context.Context) {
	if r.ctl.Fixed() {
		return
	}
	// a decision every AdaptEvery, five times as often while the window
	// still doubles: a server that takes 1,000 is reached in seconds
	t := time.NewTicker(r.w.cfg.AdaptEvery / 5)
	defer t.Stop()
	ticks := 0
	last := time.Now()
	r.mu.Lock()
	written, tokens := r.written, r.runTokens
	r.mu.Unlock()
	failures, yields := r.w.failedAttempts.Load(), r.w.yields.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		fast := r.ctl.SlowStart()
		r.mu.Unlock()
		if ticks++; !fast && ticks < 5 {
			continue
		}
		ticks = 0
		g := r.w.serverGauges(ctx)
		now := time.Now()
		f, y := r.w.failedAttempts.Load(), r.w.yields.Load()
		r.mu.Lock()
		s := Signals{
			Seconds: now.Sub(last).Seconds(), Completions: r.written - written, Tokens: r.runTokens - tokens,
			Failures: int(f - failures), Yields: int(y - yields), InFlight: r.inflight, Server: g,
		}
		written, tokens, failures, yields, last = r.written, r.runTokens, f, y, now
		if r.ctl.Observe(s) {
			r.moveWindowLocked()
		}
		r.mu.Unlock()
		r.publish()
		r.keepWindow(false)
	}
}

// serverGauges reads the server's /metrics, else (not started with
// --enable-metrics) its log; OK is false when neither says (down, or a log
// out of reach).
func (w *Worker) serverGauges(ctx context.Context) Gauges {
	if g, ok := w.metricsGauges(ctx); ok {
		return g
	}
	// two decisions' worth: SGLang logs a Decode batch line every 40 steps
	return w.srvLog.read(time.Now(), 2*w.cfg.AdaptEvery)
}

func (w *Worker) metricsGauges(ctx context.Context) (Gauges, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	text, err := w.client.getText(ctx, "/metrics")
	if err != nil {
		return Gauges{}, false
	}
	m, err := parse.ParseMetrics(strings.NewReader(text))
	if err != nil || !m.RunningReqs.OK || !m.QueueReqs.OK {
		return Gauges{}, false
	}
	g := Gauges{OK: true, Running: m.RunningReqs.V, Queued: m.QueueReqs.V, Usage: m.TokenUsage.V, Gen: m.GenThroughput.V, GenOK: m.GenThroughput.OK}
	switch {
	case m.Retracted.OK:
		g.Retracted = m.Retracted.V
	case m.Preemptions.OK:
		g.Retracted = m.Preemptions.V
	}
	return g, true
}

// logYields says, at the category's end, how often its window stepped
// back for other traffic and the last step's reason (worker.json's
// window_reason holds only the newest reason, which later growth
// replaces).
func (r *catRun) logYields() {
	r.mu.Lock()
	steps, why := r.ctl.Yielded()
	r.mu.Unlock()
	if steps > 0 {
		r.w.logf("%s: the window stepped back %d times for other traffic, the last: %s", r.c.Name, steps, why)
	}
}

// windowText is the window for the progress line: "window 212 ↑ queue
// empty; KV 71 %", or "window 150 (fixed)"; r.mu held.
func (r *catRun) windowTextLocked() string {
	if r.ctl.Fixed() {
		return fmt.Sprintf("window %d (fixed)", r.ctl.Window())
	}
	return fmt.Sprintf("window %d %s", r.ctl.Window(), r.ctl.Reason())
}
