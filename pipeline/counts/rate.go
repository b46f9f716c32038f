package counts

import (
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// rate is a running category's records per minute, and whether one is
// claimed: only with a witness a first look has too
// (parse.WitnessedRate: worker.json's fresh figure, the log's progress
// line while the log is fresh, the times of its last records), so a one-shot status, the report and a
// long watch claim alike; the figure is then the growths seen this
// session (parse.RateWindow, the worker's own estimator) if measured, else
// the witness's.
func (k *Set) rate(c *catState, js *parse.CategoryState, wjson *parse.WorkerState, lg Log, now time.Time) float64 {
	f := parse.RateFacts{Now: now, Limit: k.stallAfter}
	if js != nil && wjson != nil {
		f.WorkerRate, f.WorkerAt = js.Rate, wjson.UpdatedAt
	}
	if p := c.logProgress; p.Kind == parse.WProgress && lg.Current == c.name {
		f.LogRate, f.LogAt = p.ReqPerSec*60, lg.LastLine
	}
	_, fresher := parse.WitnessedRate(f)
	c.spanAsk = !fresher // the next poll asks for its records' span (recspan.go)
	f.Records = c.span
	witnessed, ok := parse.WitnessedRate(f)
	if !ok {
		return 0
	}
	if r, ok := c.win.PerMin(now); ok {
		return r
	}
	return witnessed
}

// becameCurrent is when the category the worker is on became current
// (parse.BecameCurrent, which the digest asks too), from the host's
// evidence whenever the dashboard first sees it: a one-shot status, a
// dashboard opened an hour into a hang and a worker found alive only at
// the third poll all judge alike. Zero when the log has no header for it:
// the stall is judged by growth.
func (k *Set) becameCurrent(c *catState, wk snapshot.Worker, wjson *parse.WorkerState, lg Log) (t time.Time, weak bool) {
	var f parse.CurrentFacts
	if st := wjson; st != nil && st.Category == c.name {
		f.JSONSince = st.CategorySince
		if f.JSONSince.IsZero() {
			f.JSONSince = st.StartedAt
		}
	}
	if l := lg; l.Current == c.name && !l.LastLine.IsZero() {
		f.LogAt, f.HeaderAt, f.HeaderOnly = l.LastLine, l.HeaderAt, l.HeaderOnly
		if p, ok := k.cats[l.Prev]; ok && p.known && !p.logSkipped {
			f.PrevLast = p.mtime
		}
		if wk.StartedAt != nil {
			f.WriterStart = *wk.StartedAt
		}
	}
	return parse.BecameCurrent(f)
}

// noteClassRates keeps each class's newest measured rate, for the ETA of the
// categories of that class still to come.
func (k *Set) noteClassRates() {
	for _, c := range k.shown {
		if c.State == snapshot.StateRunning && c.RatePerMin > 0 {
			if k.classRates == nil {
				k.classRates = map[string]float64{}
			}
			k.classRates[c.Class] = c.RatePerMin
		}
	}
}

// classRate is the class's rate measured this session, else the rate it last
// finished a category at (category_done in the timeline), else 0.
func (k *Set) classRate(class string) float64 {
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
