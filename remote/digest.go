package remote

import (
	"bytes"
	"io"

	"github.com/synthwatch/synthwatch/parse"
)

// The first read of a log starts a megabyte back, to know where each
// category stands; most of that megabyte is lines whose last one is all a
// view folds. The Go agent reads it on the host and sends it digested
// (parse.DigestLog) beside the part a pane shows, read as it is: a cold
// status moves kilobytes where it moved the megabyte. The fallback reads
// it all (Batch.Digests is false for it).

// digest writes p's D record: the lines of the history bytes before a
// tail's attach at off (-N: N bytes before the end, as tailAt), at most
// hist of them, digested by name. The range ends where the tail's first
// whole line starts (the line the attach falls in is the history's), and
// starts at a line's start. A, B: the range [from, end).
func (r *recorder) digest(p string, size, off, hist int64, name string) {
	if off < 0 {
		off = max(size+off, 0)
	}
	if size < off {
		off = 0
	}
	from := max(off-hist, 0)
	data, err := readRange(p, max(from-1, 0), min(off+int64(parse.DefaultMaxLine), size))
	if err != nil {
		r.rec("D", "err", 0, 0, 0, p, errText(err))
		return
	}
	base := max(from-1, 0)
	start := int64(0)
	if from > 0 { // begin after the line the range's first byte falls in, as a tail does
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			r.rec("D", "ok", from, from, 0, p, nil)
			return
		}
		start = int64(i) + 1
	}
	end := min(off-base, int64(len(data))) // the tail's first byte, in data
	h := data[start:max(end, start)]
	if off > 0 {
		// the tail drops the line its first byte falls in, up to its
		// newline: that line is the history's, whole, or cut at the
		// line bound (as the tail's splitter cuts one) when its newline
		// is further than that
		if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
			end += int64(i) + 1
			h = data[start:max(end, start)]
		} else if ls := bytes.LastIndexByte(data[:end], '\n') + 1; int64(ls) >= start {
			line := data[ls:min(int64(ls)+int64(parse.DefaultMaxLine), int64(len(data)))]
			h = append(append(append([]byte{}, data[start:ls]...), line...), '\n')
			end = int64(len(data))
		}
	}
	out := parse.DigestLog(name, h)
	r.rec("D", "ok", base+start, base+end, 0, p, out)
	if name == parse.DigestServer {
		r.starts(p, base+start)
	}
}

// readRange reads [from, to) of p, a regular file; a file that shrank
// meanwhile gives what is there.
func readRange(p string, from, to int64) ([]byte, error) {
	f, err := openRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, max(to-from, 0))
	n, err := f.ReadAt(b, from)
	if err == io.EOF {
		err = nil
	}
	return b[:n], err
}
