package pipeline

import (
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// rate is a running category's records per minute: the growths seen this
// session (parse.RateWindow, the worker's own estimator); before two, the
// worker's figure if it is fresh. A rate read from an old log line is no
// rate.
func (k *counts) rate(c *catState, js *parse.CategoryState, wjson *parse.WorkerState, now time.Time) float64 {
	if r, ok := c.win.PerMin(now); ok {
		return r
	}
	if js != nil && js.Rate > 0 && wjson != nil && now.Sub(wjson.UpdatedAt) < 30*time.Second {
		return js.Rate
	}
	if p := c.logProgress; p.Kind == parse.WProgress && c.logProgressFresh && p.ReqPerSec > 0 && now.Sub(c.logProgressAt) < k.stallAfter {
		return p.ReqPerSec * 60
	}
	return 0
}

// becameCurrent is when the category the worker is on became current, from
// the host's evidence, whenever the dashboard first sees it (a one-shot
// status, a dashboard opened an hour into a hang, a worker found alive only
// at the third poll all judge alike):
//   - worker.json's category_since (or the worker's start);
//   - its log header, read as it was written: that poll's time;
//   - a log that ends with its header (and the lines written with it): the
//     log's time;
//   - a header further back: the old script's lines carry no time, and what
//     it logged since (tracebacks of requests that time out) says nothing of
//     when the category began, so the evidence from before the header: the
//     previous category's last record (if it was worked on, not skipped),
//     else the writer's start if it wrote to the log since; never later
//     than the log's last line;
//   - a header and nothing else: the log's time, which the category is at
//     least as old as (weak: the stall clock takes it only when the
//     category never grew).
//
// Zero when the log has no header for it: the stall is judged by growth.
func (k *counts) becameCurrent(c *catState, wk Worker, wjson *parse.WorkerState, lg *logs) (t time.Time, weak bool) {
	if st := wjson; st != nil && st.Category == c.name {
		if !st.CategorySince.IsZero() {
			return st.CategorySince, false
		}
		return st.StartedAt, false
	}
	l := lg
	if l.current != c.name || l.lastLine.IsZero() {
		return time.Time{}, false
	}
	switch {
	case !l.headerAt.IsZero():
		return l.headerAt, false
	case l.headerOnly:
		return l.lastLine, false
	}
	if p, ok := k.cats[l.prev]; ok && p.known && !p.logSkipped && !p.mtime.IsZero() {
		t = p.mtime // the header follows the previous category's last record
	} else if wk.StartedAt != nil && wk.StartedAt.Add(2*time.Second).Before(l.lastLine) {
		// no category worked on before it: the writer's start, if it has
		// written to the log since (the start is read to the clock tick, from
		// a boot time in whole seconds)
		t = *wk.StartedAt
	}
	if t.IsZero() {
		return l.lastLine, true
	}
	return minTime(t, l.lastLine), false
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// noteClassRates keeps each class's newest measured rate, for the ETA of the
// categories of that class still to come.
func (k *counts) noteClassRates() {
	for _, c := range k.shown {
		if c.State == StateRunning && c.RatePerMin > 0 {
			if k.classRates == nil {
				k.classRates = map[string]float64{}
			}
			k.classRates[c.Class] = c.RatePerMin
		}
	}
}

// classRate is the class's rate measured this session, else the rate it last
// finished a category at (category_done in the timeline), else 0.
func (k *counts) classRate(class string) float64 {
	if r := k.classRates[class]; r > 0 {
		return r
	}
	ev := k.tl.Recent(1 << 30)
	for i := len(ev) - 1; i >= 0; i-- {
		if e := ev[i]; e.Kind == "category_done" && e.Class == class && e.RatePerMin > 0 {
			return e.RatePerMin
		}
	}
	return 0
}
