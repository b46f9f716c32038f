package digest

import "time"

// around is how far before and after an incident its cost is counted.
const around = 30 * time.Minute

// lost sets each incident's Lost: the records the time around it (from
// `around` before its start to `around` after its end) fell short of its
// baseline. A stall's baseline is its category's own rate over the window;
// the rest are the job's (every category's records over the window's span
// of them). An incident with no baseline (nothing placed in the window)
// gets none.
func (d *digester) lost(list []Incident) {
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
		minutes, rate := total, jobRate
		if in.Kind == KindStall {
			acc := d.s.byName[in.Category]
			if acc == nil {
				continue
			}
			minutes, rate = acc.minutes, 0
			if c := acc.c; c.RatePerHour > 0 {
				rate = c.RatePerHour / 60
			}
			if rate == 0 { // a category that never had a rate: the job's
				rate = jobRate
			}
		}
		if rate == 0 {
			continue
		}
		from := maxT(in.Time.Add(-around), d.start)
		to := d.o.Now
		if in.End != nil {
			to = minT(in.End.Add(around), d.o.Now)
		} else if !in.Still {
			to = minT(in.Time.Add(around), d.o.Now)
		}
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
