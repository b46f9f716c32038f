package digest

import (
	"sort"
	"time"
)

// segment is a run's time on one category: from its start line in the
// category's runs.jsonl (the worker writes one as it takes the category
// up) to the run's next start line, or the run's end.
type segment struct {
	run, cat string
	start    time.Time
}

// stall keeps a gap in a category's records for finish, which drops those
// a server outage explains.
func (d *digester) stall(cat, run string, from, to time.Time, still bool, note string) {
	in := Incident{Time: from, Kind: KindStall, Category: cat, Run: run, Still: still}
	if !still {
		in.End = &to
	}
	text := cat + ": no records"
	if note != "" {
		text += " " + note
	}
	in.Text = clip(text)
	d.stalls = append(d.stalls, in)
}

// segmentStalls finds the gaps at the edges of each run's time on a
// category, which record-to-record gaps cannot see: from the start to the
// first record (all of it for a category that hung with no record at all)
// and from the last record to the run's move on, its end, or now. Then it
// adds every stall no server outage explains.
func (d *digester) segmentStalls() {
	sort.SliceStable(d.segs, func(i, j int) bool { return d.segs[i].start.Before(d.segs[j].start) })
	for i, sg := range d.segs {
		acc := d.s.byName[sg.cat]
		if d.runs[sg.run] == nil || acc == nil {
			continue
		}
		if end, still, ok := d.segEnd(i); ok && end.After(d.start) {
			d.edgeStalls(sg, acc.spans[sg.run], end, still)
		}
	}
	d.scriptStall()
	for _, st := range d.stalls {
		if d.explained(st) || st.End != nil && !st.End.After(d.start) {
			continue
		}
		d.inc.add(st)
	}
}

// segEnd is when the run's time on segment i ends: its next start line,
// else the run's end, else now while it runs (still). ok is false when
// the run's end is not known.
func (d *digester) segEnd(i int) (end time.Time, still, ok bool) {
	sg := d.segs[i]
	for _, o := range d.segs[i+1:] {
		if o.run == sg.run && o.start.After(sg.start) {
			return o.start, false, true
		}
	}
	r := d.runs[sg.run]
	switch {
	case r.End == EndRunning:
		return d.o.Now, true, true
	case r.EndAt != nil:
		return *r.EndAt, false, true
	}
	return time.Time{}, false, false
}

// edgeStalls keeps the stalls at a segment's edges, given the run's first
// and last record on the category (sp, nil: none): none at all, or from
// its start to its first record, and from its last record to its end.
func (d *digester) edgeStalls(sg segment, sp *[2]time.Time, end time.Time, still bool) {
	var first, last time.Time
	if sp != nil {
		first, last = maxT(sp[0], sg.start), sp[1]
	}
	switch {
	case sp == nil || !first.Before(end) || last.Before(sg.start):
		if end.Sub(sg.start) > d.o.StallAfter {
			d.stall(sg.cat, sg.run, sg.start, end, still, "(none since the run took it up)")
		}
		return
	case first.Sub(sg.start) > d.o.StallAfter:
		d.stall(sg.cat, sg.run, sg.start, first, false, "(from the run's start on it to its first record)")
	}
	if last.Before(end) && end.Sub(last) > d.o.StallAfter {
		note := ""
		if still {
			note = "(the worker is still on it)"
		}
		d.stall(sg.cat, sg.run, last, end, still, note)
	}
}

// explained says a stall lies within a server outage, or a wait of its
// run on the server (give or take StallAfter): that line says it already.
func (d *digester) explained(st Incident) bool {
	by := d.outages
	for _, w := range d.waited {
		if w.Run == st.Run {
			by = append(by[:len(by):len(by)], w)
		}
	}
	for _, o := range by {
		oEnd := d.o.Now
		if o.End != nil {
			oEnd = *o.End
		}
		stEnd := d.o.Now
		if st.End != nil {
			stEnd = *st.End
		}
		if !st.Time.Before(o.Time.Add(-d.o.StallAfter)) && !stEnd.After(oEnd.Add(d.o.StallAfter)) {
			return true
		}
	}
	return false
}

// scriptStall finds the hang of a worker that writes no runs.jsonl (the old
// Python script): it works on one category after another and says
// "Processing: NAME" as it takes one up, with no time. The last category it
// took up was current from its own last record (or, with none, from the
// last record of the one before it) until the log was last written, the
// script's last word; a log written in the last minute is a hang still
// going. It says it inferred this.
func (d *digester) scriptStall() {
	if len(d.segs) > 0 || len(d.took) == 0 || d.logTime.IsZero() {
		return
	}
	cat := d.took[len(d.took)-1]
	acc := d.s.byName[cat]
	if acc == nil {
		return
	}
	from, note := acc.c.Last, "(inferred: the last category the worker log took up; the log was last written at "+d.logTime.Format("15:04")+")"
	if from == nil && len(d.took) == 2 {
		if prev := d.s.byName[d.took[0]]; prev != nil && prev.c.Name != cat {
			from, note = prev.c.Last, "(inferred: none since the worker log took it up after "+prev.c.Name+"'s last record; the log was last written at "+d.logTime.Format("15:04")+")"
		}
	}
	if from == nil || d.logTime.Sub(*from) <= d.o.StallAfter {
		return
	}
	still := d.o.Now.Sub(d.logTime) <= fresh
	d.stall(cat, "", *from, d.logTime, still, note)
}
