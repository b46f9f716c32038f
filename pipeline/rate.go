package pipeline

import (
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// rate is a running category's records per minute: the growths seen this
// session (parse.RateWindow, the worker's own estimator); before two, the
// worker's figure if it is fresh. A rate read from an old log line is no
// rate.
func (w *Watcher) rate(c *catState, js *parse.CategoryState, now time.Time) float64 {
	if r, ok := c.win.PerMin(now); ok {
		return r
	}
	if js != nil && js.Rate > 0 && w.wjson != nil && now.Sub(w.wjson.UpdatedAt) < 30*time.Second {
		return js.Rate
	}
	if p := c.logProgress; p.Kind == parse.WProgress && c.logProgressFresh && p.ReqPerSec > 0 && now.Sub(c.logProgressAt) < w.o.StallAfter {
		return p.ReqPerSec * 60
	}
	return 0
}

// firstCurrentSince is when a category the worker is on became current,
// as far as the host can tell: worker.json's category_since (or the
// worker's start), or a log that ends with the category's header (the
// log's time). Nothing else: not the process's start, which says nothing
// of when a long-lived worker reached this category. Later polls see the
// switch themselves. A file that last grew long before is stalled on first
// sight.
func (w *Watcher) firstCurrentSince(c *catState, now time.Time) time.Time {
	if w.polls > 1 {
		return now // we watched it become current
	}
	if st := w.wjson; st != nil && st.Category == c.name {
		if !st.CategorySince.IsZero() {
			return st.CategorySince
		}
		return st.StartedAt
	}
	if w.log.current == c.name && w.log.headerOnly && !w.log.lastLine.IsZero() {
		return w.log.lastLine // the log ends with its header: it just switched (or hung right after)
	}
	return time.Time{}
}

// noteClassRates keeps each class's newest measured rate, for the ETA of the
// categories of that class still to come.
func (w *Watcher) noteClassRates(cats []Category) {
	for _, c := range cats {
		if c.State == StateRunning && c.RatePerMin > 0 {
			if w.classRates == nil {
				w.classRates = map[string]float64{}
			}
			w.classRates[c.Class] = c.RatePerMin
		}
	}
}

// classRate is the class's rate measured this session, else the rate it last
// finished a category at (category_done in the timeline), else 0.
func (w *Watcher) classRate(class string) float64 {
	if r := w.classRates[class]; r > 0 {
		return r
	}
	ev := w.timeline.Recent(1 << 30)
	for i := len(ev) - 1; i >= 0; i-- {
		if e := ev[i]; e.Kind == "category_done" && e.Class == class && e.RatePerMin > 0 {
			return e.RatePerMin
		}
	}
	return 0
}
