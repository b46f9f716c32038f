package counts

import (
	"testing"
)

// A slice that holds no whole line (one record longer than the slice) is
// asked whole the next poll: the hole closes, it is not asked again and
// again; CapJobs keeps a budget's worth of jobs, numbered anew.
func TestFallbackSliceOfOneLongRecord(t *testing.T) {
	t.Parallel()
	a := &tokAcc{}
	a.openHole(20 << 20)
	for poll := 0; poll < 4 && a.hole; poll++ {
		j := a.nextJob("raw.jsonl", FallbackSumPerPoll)
		if j == nil {
			t.Fatalf("poll %d: no job for the hole [%d, %d)", poll, a.start, a.cur)
		}
		var got int64
		if j.from+j.n >= 9<<20 { // the first whole line ends at 9 MB
			got = j.n
		}
		a.job = nil
		a.answer(j, &tokResult{bytes: got})
	}
	if a.hole || a.start != 20<<20 {
		t.Fatalf("the hole stays: start %d, hole %v", a.start, a.hole)
	}
	jobs := CapJobs([]*Job{{n: 5 << 20}, {n: 5 << 20}, {n: 5 << 20}}, FallbackSumPerPoll)
	if len(jobs) != 2 || jobs[1].n != 3<<20 || jobs[1].resIndex != 1 {
		t.Fatalf("CapJobs: %d jobs, the last %d bytes at %d", len(jobs), jobs[len(jobs)-1].n, jobs[len(jobs)-1].resIndex)
	}
}
