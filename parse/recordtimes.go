package parse

import (
	"sort"
	"time"
)

// RecordTimes is how many of a file's run-less records (RecordFacts.Run
// "") finished in each minute of their own time (ParseRecordStamp's), so
// that they can be placed in the server's eras whenever those become known,
// without reading the records again. It stays bounded: at most MaxMinutes
// minutes (a 3-day night is about 4,300); a record past them is NotPlaced.
type RecordTimes struct {
	Minutes map[int64]Tally `json:"m,omitempty"` // Unix minute → its records
	NoTime  Tally           `json:"n"`           // records with no time field that reads as a time
	// NotPlaced: records whose time was not read (the fallback's awk sums
	// tokens only) or that fell past MaxMinutes
	NotPlaced Tally `json:"o"`
}

// Tally is records, the tokens of those whose count is known, and how many
// have none.
type Tally struct {
	Records int64 `json:"r"`
	Tokens  int64 `json:"t"`
	Unknown int64 `json:"u"`
}

// Add adds o to t.
func (t *Tally) Add(o Tally) {
	t.Records += o.Records
	t.Tokens += o.Tokens
	t.Unknown += o.Unknown
}

// OneRecord is a single record's tally.
func OneRecord(tokens int64, known bool) Tally {
	if !known {
		return Tally{Records: 1, Unknown: 1}
	}
	return Tally{Records: 1, Tokens: tokens}
}

// MaxMinutes bounds RecordTimes.Minutes (about 11 days of minutes).
const MaxMinutes = 1 << 14

// Add counts one record finished at at (has false: it has no time).
func (r *RecordTimes) Add(at time.Time, has bool, one Tally) {
	if !has {
		r.NoTime.Add(one)
		return
	}
	r.AddMinute(MinuteOf(at), one)
}

// MinuteOf is t's Unix minute, as RecordTimes keeps it.
func MinuteOf(t time.Time) int64 {
	s := t.Unix()
	if s < 0 {
		return (s - 59) / 60
	}
	return s / 60
}

// AddMinute adds records of one minute, bounded by MaxMinutes.
func (r *RecordTimes) AddMinute(m int64, c Tally) {
	if r.Minutes == nil {
		r.Minutes = map[int64]Tally{}
	}
	x, ok := r.Minutes[m]
	if !ok && len(r.Minutes) >= MaxMinutes {
		r.NotPlaced.Add(c)
		return
	}
	x.Add(c)
	r.Minutes[m] = x
}

// Merge adds o's records to r.
func (r *RecordTimes) Merge(o RecordTimes) {
	for m, c := range o.Minutes {
		r.AddMinute(m, c)
	}
	r.NoTime.Add(o.NoTime)
	r.NotPlaced.Add(o.NotPlaced)
}

// Records is how many records r counts.
func (r RecordTimes) Records() int64 {
	n := r.NoTime.Records + r.NotPlaced.Records
	for _, c := range r.Minutes {
		n += c.Records
	}
	return n
}

// Clone is a copy that shares nothing with r.
func (r RecordTimes) Clone() RecordTimes {
	out := RecordTimes{NoTime: r.NoTime, NotPlaced: r.NotPlaced}
	if r.Minutes != nil {
		out.Minutes = make(map[int64]Tally, len(r.Minutes))
		for m, c := range r.Minutes {
			out.Minutes[m] = c
		}
	}
	return out
}

// EraCount is how many records one era's configuration made.
type EraCount struct {
	Label    string `json:"config"`
	Settings string `json:"server_args,omitempty"`
	Tally
}

// Placement is a file's run-less records placed in eras.
type Placement struct {
	Eras []EraCount // in the order of their first era, only those with records
	// Outside: records with a time before the first start known (or with
	// no start known at all): their configuration is unknown
	Outside   Tally
	NoTime    Tally // no time field: unplaced, never guessed
	NotPlaced Tally // RecordTimes.NotPlaced
}

// PlaceRecords places r's records in eras (Eras' order). A minute goes to
// the era whose start is at or before the minute's first second: records
// of a start's own minute go to the era before it (a server takes longer
// than that minute to load, so they were the old server's). Eras with one
// label add up.
func PlaceRecords(eras []Era, r RecordTimes) Placement {
	p := Placement{NoTime: r.NoTime, NotPlaced: r.NotPlaced}
	idx := map[string]int{}
	for _, e := range eras {
		if _, ok := idx[e.Label]; !ok {
			idx[e.Label] = len(p.Eras)
			p.Eras = append(p.Eras, EraCount{Label: e.Label, Settings: e.Settings})
		}
	}
	for m, c := range r.Minutes {
		at := time.Unix(m*60, 0)
		i := sort.Search(len(eras), func(i int) bool { return eras[i].Start.After(at) }) - 1
		if i < 0 {
			p.Outside.Add(c)
			continue
		}
		p.Eras[idx[eras[i].Label]].Add(c)
	}
	kept := p.Eras[:0]
	for _, e := range p.Eras {
		if e.Records > 0 {
			kept = append(kept, e)
		}
	}
	p.Eras = kept
	return p
}

// The words for run-less records no era takes, in every view.
const (
	ConfigNoTime    = "unplaced (no time)" // no time field: never guessed
	ConfigNotPlaced = "not placed"         // their times were not read (the fallback) or overflowed
)
