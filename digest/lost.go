package digest

import "time"

// baseline is what an incident's loss is measured against: the records
// placed in each minute of the window, their rate per minute, and the
// first and last of them (the loss counts only while they ran).
type baseline struct {
	minutes map[int32]int64
	rate    float64
	lo, hi  time.Time
}

// lost sets each incident's Lost: the records the time around it (from
// half an interval before its start to half an interval after its end:
// the hour around it in an hourly report) fell short of its baseline,
// counted only while the baseline's records ran (from the first to the
// last of them in the window). A stall's baseline is its category's own
// rate over the window; the rest are the job's (every category's records
// over the window's span of them). An incident with no baseline (nothing
// placed in the window) gets none.
func (d *digester) lost(list []Incident) {
	job := d.jobBaseline()
	for i := range list {
		in := &list[i]
		if b, ok := d.baselineOf(*in, job); ok {
			if n, ok := d.lostAround(*in, b); ok {
				in.Lost = &n
			}
		}
	}
}

// jobBaseline is every category's records over the window's span of them.
func (d *digester) jobBaseline() baseline {
	b := baseline{minutes: map[int32]int64{}}
	var all int64
	for _, c := range d.s.Categories {
		acc := d.s.byName[c.Name]
		for m, n := range acc.minutes {
			b.minutes[m] += n
		}
		if acc.inWindow > 0 {
			if all == 0 || acc.wFirst.Before(b.lo) {
				b.lo = acc.wFirst
			}
			if all == 0 || acc.wLast.After(b.hi) {
				b.hi = acc.wLast
			}
			all += acc.inWindow
		}
	}
	if all >= 2 && b.hi.After(b.lo) {
		b.rate = float64(all-1) / b.hi.Sub(b.lo).Minutes()
	}
	return b
}

// baselineOf is an incident's baseline: none for a start, or a run's end
// that left no gap; a stall's category's own where it has a rate, else
// the job's. ok is false without one.
func (d *digester) baselineOf(in Incident, job baseline) (b baseline, ok bool) {
	switch in.Kind {
	case KindRunStart, KindStart, KindRestart:
		return b, false
	case KindRunEnd:
		if in.End == nil { // a run that ended and left no gap
			return b, false
		}
	case KindStall:
		acc := d.s.byName[in.Category]
		if acc == nil {
			return b, false
		}
		if c := acc.c; c.RatePerHour > 0 { // else a category with no rate: the job's
			job = baseline{acc.minutes, c.RatePerHour / 60, acc.wFirst, acc.wLast}
		}
	}
	return job, job.rate != 0
}

// lostAround is how far the records around an incident fell short of b
// (ok false: no time around it in the window).
func (d *digester) lostAround(in Incident, b baseline) (n int64, ok bool) {
	around := d.o.Every / 2
	end := in.Time
	switch {
	case in.End != nil:
		end = *in.End
	case in.Still:
		end = d.o.Now
	}
	// the incident itself counts even past the baseline's records: a
	// hang at the end of the night is a loss
	from := maxT(minT(in.Time, maxT(in.Time.Add(-around), b.lo)), d.start)
	to := minT(maxT(end, minT(end.Add(around), b.hi)), d.o.Now)
	if !to.After(from) {
		return 0, false
	}
	var got int64
	for m := int32(from.Sub(d.start) / time.Minute); m < int32((to.Sub(d.start)+time.Minute-1)/time.Minute); m++ {
		got += b.minutes[m]
	}
	return max(int64(b.rate*to.Sub(from).Minutes()+0.5)-got, 0), true
}
