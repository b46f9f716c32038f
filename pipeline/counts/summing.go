package counts

import (
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// SumWithin is the dashboard's time budget for each answer of the holes'
// sums by the Go agent (Config.SumWithin, remote/tokensum.go's within=):
// a night written while no dashboard watched (about 2 s a gigabyte from
// the agent's kept offset) is summed over a few polls asked one after
// the other, its progress shown between them, not in one answer that
// leaves the TOKENS cells blank for seconds. A time, not bytes: the
// answer is what the user waits for, and a host's speed varies tenfold
// (page cache or disk); 300 ms keeps an answer under a third of a second
// past the round trip, and a gigabyte costs a round trip every ~150 MB.
const SumWithin = 300 * time.Millisecond

// summing is how far a's hole has been summed since it opened: the bytes
// summed of the bytes to sum, while the host is summing it (a hole, no
// failure); the Counter's growth since adds to both. Not while it waits
// for an unfinished last line to end (waitsOnTail: nothing to sum, the
// figure is whole).
func (a *tokAcc) summing() (s snapshot.Summing, ok bool) {
	if !a.hole || a.err != "" || a.waitsOnTail() {
		return snapshot.Summing{}, false
	}
	return snapshot.Summing{Done: a.start - a.holeAt, Total: a.cur - a.holeAt}, true
}

// summingFigure sets v's TokensSumming when it has no token figure yet
// and its records' tokens are being summed: not by a one-shot status,
// whose figure is whole or none (by the fallback it counts only). Resume
// only where the agent reads this poll: the fallback's awk sums a slice a
// poll at the poll's beat (FallbackSumPerPoll), not one after the other.
func (k *Set) summingFigure(c *catState, v *snapshot.Category) {
	if k.onePoll || !c.known || v.CompletionTokens != nil {
		return
	}
	if s, ok := c.tok.summing(); ok {
		// the agent sums on within its budget: the next poll at once
		s.Resume = k.within > 0 && k.agentCounts
		v.TokensSumming = &s
	}
}

// TotalSumming is the categories' TokensSumming added up (nil: none).
func TotalSumming(cats []snapshot.Category) *snapshot.Summing {
	var s *snapshot.Summing
	for _, c := range cats {
		if c.TokensSumming != nil {
			s = s.Add(*c.TokensSumming)
		}
	}
	return s
}
