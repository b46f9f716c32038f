package remote

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"syscall"
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

// noteTime counts one record in s's minutes when it names no run (its
// time read in the scan that read its facts, parse.ParseRecordFactsAt).
func (s *rangeSum) noteTime(f parse.RecordFacts, at time.Time, hasAt bool) {
	if f.Run == "" {
		s.times.Add(at, hasAt, parse.OneRecord(f.CompletionTokens, f.HasTokens))
	}
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

// The kept minutes are not copied on a steady poll: a range that extends
// the file's kept sums adds its minutes to them in place (keepOn), under
// the lock that save's marshal takes, and a read from 0 copies them
// (timesOf) only while they are the file's current state, so no read sees
// minutes beyond the sums they go with.

// timesOf is, for a read from 0, a copy of kept's minutes, and kept; nil
// when kept is no longer p's current state (another request moved it
// on): the caller then sums from 0.
func (ts *tokenSums) timesOf(p string, kept *sumState, from int64) (parse.RecordTimes, *sumState) {
	if kept == nil || from != 0 {
		return parse.RecordTimes{}, kept
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.files[p] != kept {
		return parse.RecordTimes{}, nil
	}
	if kept.Times == nil {
		return parse.RecordTimes{}, kept
	}
	return kept.Times.Clone(), kept
}

// keepOn keeps all, kept's file summed further by a range whose minutes
// are all.times: they are added to kept's in place, which the new state
// takes over, unless kept is no longer p's current state (nothing kept).
func (ts *tokenSums) keepOn(p string, f *os.File, st *syscall.Stat_t, kept *sumState, all rangeSum) {
	if st == nil {
		return
	}
	s := &sumState{Dev: uint64(st.Dev), Ino: st.Ino, Off: all.bytes, Tail: tailHash(f, all.bytes), T: all.t, ByRun: copyRuns(all.byRun), O: all.out, G: all.gate, Times: kept.Times}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.files[p] != kept {
		return
	}
	if s.Times == nil {
		s.Times = &parse.RecordTimes{}
	}
	s.Times.Merge(all.times)
	ts.files[p] = s
	ts.dirty = true
}

func ptrTimes(t parse.RecordTimes) *parse.RecordTimes { return &t }

// The kept sums are written at most every saveEvery, and when the agent
// ends: with the minutes in them a write costs what the files' minutes
// do (3.7 ms for 4,500), not what a poll's new records do. A write lost to
// a killed agent costs only a re-read of the bytes since the last one (the
// sums on disk stay whole: their offset, hash and figures go together).
const saveEvery = 10 * time.Second

// due says a write is due, and marks it done (ts.mu held).
func (ts *tokenSums) due() bool {
	if now := time.Now(); ts.saved.IsZero() || now.Sub(ts.saved) >= saveEvery {
		ts.saved = now
		return true
	}
	return false
}

// flush writes the kept sums now if they changed.
func (ts *tokenSums) flush() {
	ts.mu.Lock()
	ts.saved = time.Time{}
	ts.mu.Unlock()
	ts.save()
}
