package digest

import "sort"

// perKind bounds the incidents kept of each kind: the latest ones. A night
// of a thousand retries must not make the summary big.
const perKind = 60

// incidents keeps the latest perKind incidents of each kind.
type incidents struct {
	byKind  map[string][]Incident
	dropped int
}

func newIncidents() *incidents { return &incidents{byKind: map[string][]Incident{}} }

func (x *incidents) add(in Incident) {
	l := x.byKind[in.Kind]
	if len(l) == perKind {
		// drop the earliest; sources are mostly in time order
		j := 0
		for i := range l {
			if l[i].Time.Before(l[j].Time) {
				j = i
			}
		}
		if in.Time.Before(l[j].Time) {
			x.dropped++
			return
		}
		l = append(l[:j], l[j+1:]...)
		x.dropped++
	}
	x.byKind[in.Kind] = append(l, in)
}

// sorted returns every kept incident by time, and how many were dropped.
func (x *incidents) sorted() ([]Incident, int) {
	out := []Incident{}
	for _, l := range x.byKind {
		out = append(out, l...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		return out[i].Kind < out[j].Kind
	})
	return out, x.dropped
}
