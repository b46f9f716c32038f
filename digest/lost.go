package digest

import "time"

// lost sets each incident's Lost: the records the time around it (from
// half an interval before its start to half an interval after its end:
// the hour around it in an hourly report) fell short of its baseline,
// counted only while the baseline's records ran (from the first to the
// last of them in the window). A stall's baseline is its category's own
// rate over the window; the rest are the job's (every category's records
// over the window's span of them). An incident with no baseline (nothing
// placed in the window) gets none.
func (d *digester) lost(list []Incident) {
	around := d.o.Every / 2
	total := map[int32]int64{}
	var all int64
	var first, last time.Time
	for _, c := range d.s.Categories {
		acc := d.s.byName[c.Name]
		for m, n := range acc.minutes {
			total[m] += n
		}
		if acc.inWindow > 0 {
			if all == 0 || acc.wFirst.Before(first) {
				first = acc.wFirst
			}
			if all == 0 || acc.wLast.After(last) {
				last = acc.wLast
			}
			all += acc.inWindow
		}
	}
	var jobRate float64 // per minute
	if all >= 2 && last.After(first) {
		jobRate = float64(all-1) / last.Sub(first).Minutes()
	}
	for i := range list {
		in := &list[i]
		switch in.Kind {
		case KindRunStart, KindStart, KindRestart:
			continue
		case KindRunEnd:
			if in.End == nil { // a run that ended and left no gap
				continue
			}
		}
		minutes, rate, lo, hi := total, jobRate, first, last
		if in.Kind == KindStall {
			acc := d.s.byName[in.Category]
			if acc == nil {
				continue
			}
			if c := acc.c; c.RatePerHour > 0 { // else a category with no rate: the job's
				minutes, rate, lo, hi = acc.minutes, c.RatePerHour/60, acc.wFirst, acc.wLast
			}
		}
		if rate == 0 {
			continue
		}
		end := in.Time
		switch {
		case in.End != nil:
			end = *in.End
		case in.Still:
			end = d.o.Now
		}
		// the incident itself counts even past the baseline's records: a
		// hang at the end of the night is a loss
		from := maxT(minT(in.Time, maxT(in.Time.Add(-around), lo)), d.start)
		to := minT(maxT(end, minT(end.Add(around), hi)), d.o.Now)
		if !to.After(from) {
			continue
		}
		var got int64
		for m := int32(from.Sub(d.start) / time.Minute); m < int32((to.Sub(d.start)+time.Minute-1)/time.Minute); m++ {
			got += minutes[m]
		}
		n := max(int64(rate*to.Sub(from).Minutes()+0.5)-got, 0)
		in.Lost = &n
	}
}
