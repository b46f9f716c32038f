package remote

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
)

// A range cut by its time budget (within) is summed on in the background
// after the answer, from where it stopped to where it was asked to end,
// until the next request: that one asks from there (the laptop's job
// begins where the last answer reached), takes what was summed meanwhile
// and sums on within its own budget. The round trip and the laptop's
// poll between two answers are not time the file waits: a gigabyte is
// summed in about the time one whole answer takes, its progress shown
// on the way. One range at a time (the first cut in a request): a host's
// other cores are the worker's and the server's.

// aheadSum is one range summed on past a cut answer.
type aheadSum struct {
	path     string
	from     int64 // where the cut answer reached
	dev, ino uint64
	stop     atomic.Bool
	done     chan struct{}
	sum      rangeSum // [from, from+sum.bytes), once done is closed
	err      error
}

// aheadFrom is a cut range to sum on: p's [from, end).
type aheadFrom struct {
	path      string
	from, end int64
}

// goAhead sums next on in the background when the kept sums reach its
// start (a range from 0 or from the kept offset: the next request's
// range is then answered from them).
func (ts *tokenSums) goAhead(next *aheadFrom) {
	if next == nil || next.end <= next.from {
		return
	}
	ts.mu.Lock()
	kept := ts.files[next.path]
	ts.mu.Unlock()
	if kept == nil || kept.Off != next.from {
		return
	}
	f, err := openRegular(next.path)
	if err != nil {
		return
	}
	fi, err := f.Stat()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if err != nil || !ok {
		f.Close()
		return
	}
	ts.stopAhead() // one at a time
	a := &aheadSum{path: next.path, from: next.from, dev: uint64(st.Dev), ino: st.Ino, done: make(chan struct{})}
	maxLength := ts.gateMax(next.path)
	ts.mu.Lock()
	ts.ahead = a
	ts.mu.Unlock()
	go func() {
		defer close(a.done)
		defer f.Close()
		a.sum, a.err = sumRange(f, a.from, next.end-a.from, maxLength, a.stop.Load)
	}()
}

// takeAhead is the range being summed on, stopped, when args (FILE FROM
// N…) ask for it from where it began, or for its file from 0 (a whole
// sum after a cut answer: the kept sums reach where it began, and sum
// takes it from there, not the same bytes a second time); nil: none.
// Another request, a count's sum of another file, leaves it running.
func (ts *tokenSums) takeAhead(args []string) *aheadSum {
	ts.mu.Lock()
	a := ts.ahead
	asked := false
	for i := 0; a != nil && i+3 <= len(args); i += 3 {
		asked = asked || args[i] == a.path && (args[i+1] == strconv.FormatInt(a.from+1, 10) || args[i+1] == "1")
	}
	ts.mu.Unlock()
	if !asked {
		return nil
	}
	return ts.stopAhead()
}

// stopAhead stops the range being summed on and returns it (nil: none):
// it stops after the line it is on, within checkEvery bytes.
func (ts *tokenSums) stopAhead() *aheadSum {
	ts.mu.Lock()
	a := ts.ahead
	ts.ahead = nil
	ts.mu.Unlock()
	if a == nil {
		return nil
	}
	a.stop.Store(true)
	<-a.done
	if a.err != nil {
		return nil
	}
	return a
}

// sumOn sums [from, from+n) of p (f, st: the file it is now) until stop,
// from what a summed on when it is that file's from the same offset,
// with the same gate rule, and within the range.
func (a *aheadSum) sumOn(p string, f *os.File, st *syscall.Stat_t, from, n, maxLength int64, stop func() bool) (rangeSum, error) {
	if a == nil || st == nil || a.path != p || a.from != from || a.dev != uint64(st.Dev) || a.ino != st.Ino || a.sum.max != maxLength || a.sum.bytes > n {
		return sumRange(f, from, n, maxLength, stop)
	}
	out := a.sum
	out.cut = false
	d, err := sumRange(f, from+out.bytes, n-out.bytes, maxLength, stop)
	if err != nil {
		return rangeSum{}, err
	}
	out.merge(d)
	return out, nil
}
