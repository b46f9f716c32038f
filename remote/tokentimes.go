package remote

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The agent keeps, per file, when its run-less records (the old script's:
// no "run") finished, a count per minute (parse.RecordTimes), so the
// laptop can place them in the server's eras (parse.PlaceRecords) with
// eras it learns later, without asking again. A range's answer carries
// its own minutes only: a steady poll's grows with its new records.
//
//	I E notime_records notime_tokens notime_unknown notplaced_records notplaced_tokens notplaced_unknown
//	I M minute records tokens unknown        (one per minute, Unix minutes, ascending)

// noteTime counts one record in s's minutes when it names no run.
func (s *rangeSum) noteTime(l []byte, f parse.RecordFacts) {
	if f.Run != "" {
		return
	}
	st, err := parse.ParseRecordStamp(l, time.Local) // a zone-less time is the host's
	if err != nil {
		return
	}
	s.times.Add(st.Finished, st.HasFinished, parse.OneRecord(f.CompletionTokens, f.HasTokens))
}

// writeTimes prints s's minutes as range i's E and M lines.
func (s rangeSum) writeTimes(w *bytes.Buffer, i int) {
	t := s.times
	fmt.Fprintf(w, "%d E %d %d %d %d %d %d\n", i, t.NoTime.Records, t.NoTime.Tokens, t.NoTime.Unknown, t.NotPlaced.Records, t.NotPlaced.Tokens, t.NotPlaced.Unknown)
	ms := make([]int64, 0, len(t.Minutes))
	for m := range t.Minutes {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(a, b int) bool { return ms[a] < ms[b] })
	for _, m := range ms {
		c := t.Minutes[m]
		fmt.Fprintf(w, "%d M %d %d %d %d\n", i, m, c.Records, c.Tokens, c.Unknown)
	}
}
