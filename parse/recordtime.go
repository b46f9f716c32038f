package parse

import (
	"bytes"
	"time"
)

// timeRaw gathers, in a record's scan, the members its own time may be
// in: finished_at and TimeFields (the last of duplicates wins).
type timeRaw struct {
	fin    []byte
	others [4][]byte // TimeFields' values, in its order (TestTimeFieldsFit)
}

func (t *timeRaw) take(key string, v []byte) {
	if key == FinishedField {
		t.fin = v
		return
	}
	for i, f := range TimeFields[:len(t.others)] {
		if key == f {
			t.others[i] = v
			return
		}
	}
}

// when is the record's time and the member it came from: finished_at,
// else the first of TimeFields that reads as a time (ParseRecordStamp's).
func (t *timeRaw) when(loc *time.Location) (time.Time, bool, string) {
	if at, ok := stampTime(t.fin, loc); ok {
		return at, true, FinishedField
	}
	for i, k := range TimeFields[:len(t.others)] {
		if at, ok := stampTime(t.others[i], loc); ok {
			return at, true, k
		}
	}
	return time.Time{}, false, ""
}

// ParseRecordFactsAt is ParseRecordFacts and, for a record that names no
// run (the old script's), its own time as ParseRecordStamp reads it (a
// zone-less time in loc): in the same scan for a record another tool
// wrote. A record with a run gives no time (its run places it).
func ParseRecordFactsAt(line []byte, loc *time.Location) (f RecordFacts, at time.Time, hasAt bool, err error) {
	if _, ok := fastHead(line); ok { // the Go worker's: it names its run
		if f, err = ParseRecordFacts(line); err != nil || f.Run != "" {
			return f, time.Time{}, false, err
		}
		st, serr := ParseRecordStamp(line, loc)
		return f, st.Finished, serr == nil && st.HasFinished, nil
	}
	var tr timeRaw
	o := outcomeRaw{times: &tr}
	h, err := plainHeadWith(bytes.TrimPrefix(line, bom), &o)
	if err != nil {
		return RecordFacts{}, time.Time{}, false, err
	}
	f = plainFacts(h, &o)
	if f.Run == "" {
		at, hasAt, _ = tr.when(loc)
	}
	return f, at, hasAt, nil
}
