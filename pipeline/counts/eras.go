package counts

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Records with no run (the old script's) are placed by their own time in
// the eras of the server logs' start lines (parse.Eras, parse.PlaceRecords).
// The tally keeps their times per minute (parse.RecordTimes): those the
// Counter's reads bring are read here (tallyLine), the host's
// sums come from the agent's E and M lines (remote/tokentimes.go); the
// fallback's awk reads no times, so its run-less records are "not placed".
// The start lines come from the server logs' tails as they fold
// (foldStartup), and from the agent's first read of a log, which sends the
// start lines before the tail's history (remote/digest.go's L record).

// hostZone is the host's zone as the events know it (this machine's until
// then).
func (k *Set) hostZone() *time.Location {
	if k.zone == nil {
		return time.Local
	}
	return k.zone
}

// timesLine reads an agent's E or M line into r ("I E r t u r t u", "I M
// minute r t u"): counts, never negative.
func (r *tokResult) timesLine(f []string) error {
	g := bytes.Fields([]byte(joinFields(f[2:])))
	want := map[string]int{"E": 6, "M": 4}[f[1]]
	if len(g) != want {
		return errors.New("wrong number of fields")
	}
	v := make([]int64, len(g))
	for i, x := range g {
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil || (n < 0 && !(f[1] == "M" && i == 0)) {
			return errors.New("not a count")
		}
		v[i] = n
	}
	r.timed = true
	if f[1] == "E" {
		r.t.times.NoTime.Add(parse.Tally{Records: v[0], Tokens: v[1], Unknown: v[2]})
		r.t.times.NotPlaced.Add(parse.Tally{Records: v[3], Tokens: v[4], Unknown: v[5]})
		return nil
	}
	r.t.times.AddMinute(v[0], parse.Tally{Records: v[1], Tokens: v[2], Unknown: v[3]})
	return nil
}

func joinFields(f []string) string {
	var b bytes.Buffer
	for i, x := range f {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x)
	}
	return b.String()
}

// untimed marks a range the awk summed (no E line): its run-less records
// are not placed.
func (r *tokResult) untimed() {
	if r.timed || r.err != "" {
		return
	}
	if x := r.t.byRun[""]; x.Records > 0 {
		r.t.times = parse.RecordTimes{NotPlaced: x}
	}
}
