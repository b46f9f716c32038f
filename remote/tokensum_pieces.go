package remote

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
)

// A night written while no dashboard watched is summed whole once: a
// gigabyte of records took 2 s of one core, and a GPU host has dozens.
// A range of more than two pieces is cut at line ends into pieces summed
// side by side, a wave of them at a time, and merged in the file's order
// (rangeSum.merge). A request's time (within) is asked in each piece as
// in one pass: the answer ends at the first piece it cut, the pieces
// after it summed again by the next request.

const pieceBytes = 8 << 20

// sumWorkers are the pieces of a wave: the cores, at most 16 (a wave
// holds a 256 KB buffer a piece).
var sumWorkers = min(runtime.GOMAXPROCS(0), 16)

// sumRange sums the whole lines of [from, from+n) of f, as sumSerial.
func sumRange(f *os.File, from, n, maxLength int64, stop func() bool) (rangeSum, error) {
	if n < 2*pieceBytes || sumWorkers < 2 {
		return sumSerial(f, from, n, maxLength, stop)
	}
	s := rangeSum{max: maxLength}
	at, end := from, from+n
	for at < end {
		cuts, err := pieceEnds(f, at, end, sumWorkers)
		if err != nil {
			return s, err
		}
		sums, errs := make([]rangeSum, len(cuts)), make([]error, len(cuts))
		var wg sync.WaitGroup
		for i, to := range cuts {
			start := at
			if i > 0 {
				start = cuts[i-1]
			}
			wg.Go(func() { sums[i], errs[i] = sumSerial(f, start, to-start, maxLength, stop) })
		}
		wg.Wait()
		for i := range sums {
			if errs[i] != nil {
				return s, errs[i]
			}
			s.merge(sums[i])
			if sums[i].cut { // the pieces after it are not contiguous with it: summed again next time
				return s, nil
			}
		}
		at = cuts[len(cuts)-1]
	}
	return s, nil
}

// pieceEnds are the ends of up to k pieces from at (a line's start): each
// just after the first '\n' at or past pieceBytes from its start, the
// last at end when no line ends before it.
func pieceEnds(f *os.File, at, end int64, k int) ([]int64, error) {
	var cuts []int64
	buf := make([]byte, 64<<10)
	for len(cuts) < k && at < end {
		next, err := lineEndFrom(f, at+pieceBytes, end, buf)
		if err != nil {
			return nil, err
		}
		cuts = append(cuts, next)
		at = next
	}
	return cuts, nil
}

// lineEndFrom is just after the first '\n' in [from-1, end) of f, or end.
func lineEndFrom(f *os.File, from, end int64, buf []byte) (int64, error) {
	for at := max(from-1, 0); at < end; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-at)], at)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return at + int64(i) + 1, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if n == 0 {
			return end, nil // the file is shorter than asked: its end
		}
		at += int64(n)
	}
	return end, nil
}
