package parse

import "time"

// RateWindow estimates a completion rate from growth observations: each
// one is a moment the count was seen to grow, and the count then. The
// worker (for worker.json and its log) and the dashboard use this one
// estimator, so they print the same figure.
//
// The rate runs from one growth to the newest one over a window that holds
// at least RateRecords records and RateSpan of time (whichever holds more
// data), so bursts (50 records every 20 s) average out instead of
// spiking. A quiet spell longer than the window's usual gap between growths
// is added to the time, so the figure falls while nothing arrives.
type RateWindow struct {
	ev []growth // oldest first
}

type growth struct {
	at time.Time
	n  int64
}

// The window's size: whichever of the two holds more data.
const (
	RateRecords = 200
	RateSpan    = 5 * time.Minute
	rateKeep    = 4096 // observations at most, whatever the window asks
	// no figure before three growths over RateMinSpan: the first records
	// of a category (a burst of 16 finishing together, or one LONG answer
	// after a minute) say little of its pace
	RateMinSpan = 10 * time.Second
)

// Add notes that the count was n at t. A count that went down (a recount,
// a replaced file) starts the window again; one that did not grow is not a
// growth and is ignored.
func (r *RateWindow) Add(t time.Time, n int64) {
	if k := len(r.ev); k > 0 {
		last := r.ev[k-1]
		switch {
		case n < last.n || t.Before(last.at):
			r.ev = r.ev[:0]
		case n == last.n:
			return
		}
	}
	r.ev = append(r.ev, growth{t, n})
	// drop the oldest while the rest still fills the window
	for len(r.ev) > 2 {
		last, second := r.ev[len(r.ev)-1], r.ev[1]
		if len(r.ev) <= rateKeep && (last.n-second.n < RateRecords || last.at.Sub(second.at) < RateSpan) {
			break
		}
		r.ev = r.ev[1:]
	}
	if cap(r.ev) > 2*rateKeep { // keep memory flat over days
		r.ev = append([]growth(nil), r.ev...)
	}
}

// Reset forgets every observation (a new run, the end of a stall).
func (r *RateWindow) Reset() { r.ev = r.ev[:0] }

// Observed is how many growths the window holds.
func (r *RateWindow) Observed() int { return len(r.ev) }

// PerMin is the rate in records per minute at now; ok is false until three
// growths spanning RateMinSpan have been seen.
func (r *RateWindow) PerMin(now time.Time) (rate float64, ok bool) {
	k := len(r.ev)
	if k < 3 {
		return 0, false
	}
	first, last := r.ev[0], r.ev[k-1]
	span := last.at.Sub(first.at)
	if span < RateMinSpan {
		return 0, false
	}
	gap := span / time.Duration(k-1)
	if quiet := now.Sub(last.at) - gap; quiet > 0 {
		span += quiet
	}
	return float64(last.n-first.n) / span.Minutes(), true
}
