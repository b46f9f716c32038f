package remote

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// Counter keeps an exact line count (what `wc -l` says) of a growing file.
// The first count of a big file runs on the host, bounded to a size snapshot,
// so nothing big crosses the wire; later counts look only at added bytes.
//
// A count is only worth its bytes if the file still holds them: a worker
// that cuts a torn or NUL tail and appends new records, or a file replaced
// by another one, can grow past the counted size between two polls. So the
// Counter keeps the last overlapLen bytes before its offset (and any partial
// last line: see setTail) and reads them again with what is new (a poll
// moves overlapLen bytes more, whatever the file's size). If they changed, or the file shrank, it counts again from
// zero (on the host for a big file). A file whose size did not move but
// whose mtime did was rewritten: it is counted again too. (What no cheap
// check sees: bytes changed before the overlap of a file that also grew,
// while the overlap itself stayed the same; and, through a Keeper's kept
// handle, a file that grew and was then replaced in the same interval: the
// old file's growth is read until the path's new file outgrows it, then the
// overlap differs and it is counted again.)
type Counter struct {
	Path string
	// RemoteAbove: when more than this many bytes are new, count them on the
	// host with head/tail/wc instead of reading them over SFTP.
	RemoteAbove int64
	// OnRead, when set, is handed each newly counted range read over the
	// link (off: where b starts in the file), so the caller can take more
	// from the new bytes without reading them again. b is only valid during
	// the call. Ranges counted on the host are never read: the caller sees
	// them as CountUpdate.Size moving past what it was handed.
	OnRead func(off int64, b []byte)

	off   int64
	lines int64
	known bool
	ahead readAhead
	tail  []byte    // the bytes [off-len(tail), off) as counted
	mtime time.Time // the file's mtime when it was counted to off
}

// overlapLen is how many counted bytes a poll reads again to check that
// the file still holds them.
const overlapLen = 128

// NewCounter counts path's lines.
func NewCounter(path string) *Counter { return &Counter{Path: path, RemoteAbove: 256 << 10} }

// CountUpdate is the result of one poll of a Counter.
type CountUpdate struct {
	Path    string
	Lines   int64 // exact newline count of the file at Size
	Size    int64
	Info    FileInfo
	Missing bool
	Grew    bool // new lines since the last poll
	Reset   bool // the file shrank, vanished, or its counted bytes changed: counted again from 0
	// End is the file's bytes just before Size, when a count on the host
	// read them (to check at the next poll): its unfinished last line, if
	// any, for a caller that never saw the counted bytes.
	End []byte
	Err error
}

// Lines is the last exact count.
func (c *Counter) Lines() int64 { return c.lines }

// countPlan is what a poll reads of a counted file: k bytes already
// counted (to check them), then n new ones, from off-k.
type countPlan struct {
	k      int
	learn  bool // the k bytes are read to keep, not to compare (not known yet)
	n      int64
	size   int64     // the stat's size
	mtime  time.Time // the stat's mtime
	onHost bool
}

func (pl countPlan) from(c *Counter) int64 { return c.off - int64(pl.k) }

// plan returns the byte range still to count (with the overlap before it),
// and whether to count it on the host.
func (c *Counter) plan(fi FileInfo, statErr error, up *CountUpdate) (pl countPlan) {
	up.Path, up.Info = c.Path, fi
	if statErr == nil && (fi.IsDir || fi.Mode.Type() != 0) {
		// a FIFO or a directory where the records go holds no count: it
		// is said, never taken for an empty file (no read waits on a FIFO)
		m := fi.Mode.Type()
		if fi.IsDir {
			m = fs.ModeDir
		}
		statErr = notRegular(c.Path, m)
	}
	if statErr != nil {
		if !errors.Is(statErr, fs.ErrNotExist) {
			up.Err = statErr
			up.Lines, up.Size = c.lines, c.off
			return countPlan{}
		}
		up.Missing, up.Reset = true, c.off > 0
		c.reset()
		c.known = true
		return countPlan{}
	}
	rewritten := fi.Size == c.off && c.off > 0 && !c.mtime.IsZero() && !fi.ModTime.Equal(c.mtime)
	if fi.Size < c.off || rewritten {
		// shrank, or changed without growing (an appending writer always
		// grows it): count it all again
		up.Reset = true
		c.reset()
	}
	up.Size = fi.Size
	pl = countPlan{k: len(c.tail), n: fi.Size - c.off, size: fi.Size, mtime: fi.ModTime}
	if pl.n == 0 {
		c.known = true
		up.Lines = c.lines
		return countPlan{}
	}
	if c.tail == nil && c.off > 0 {
		pl.k, pl.learn = int(min(overlapLen, c.off)), true
	}
	pl.onHost = pl.n > c.RemoteAbove
	return pl
}

func (c *Counter) reset() {
	c.off, c.lines, c.tail, c.mtime = 0, 0, nil, time.Time{}
}

// apply counts data, the bytes [off-k, off+n) of pl. It returns false,
// counting nothing, when the k bytes already counted changed.
func (c *Counter) apply(data []byte, pl countPlan, up *CountUpdate) bool {
	if !pl.learn && !bytes.Equal(data[:pl.k], c.tail) {
		return false
	}
	if c.OnRead != nil {
		c.OnRead(c.off, data[pl.k:])
	}
	c.add(int64(bytes.Count(data[pl.k:], []byte{'\n'})), c.off+pl.n, up)
	c.setTail(data, pl.mtime)
	return true
}

// setTail keeps the end of data, which ends at c.off, to read again at the
// next growth: the last overlapLen bytes, or, when the file ends in a
// partial line (a torn record, a crash's NULs), from overlapLen bytes
// before its last newline. RepairTail cuts to that newline: whatever it
// appends then differs from what was there, even when the next crash
// leaves NULs again past the old size.
func (c *Counter) setTail(data []byte, mtime time.Time) {
	s := len(data) - overlapLen
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		if len(data)-(i+1) <= maxPartial {
			s = min(s, i+1-overlapLen)
		}
	} else if len(data) <= maxPartial+overlapLen {
		s = 0 // data starts before the last newline counted: keep it all
	}
	c.tail = append(c.tail[:0], data[max(0, s):]...)
	c.mtime = mtime
}

// maxPartial bounds the partial last line the overlap spans: beyond it only
// the last overlapLen bytes are read again.
const maxPartial = 1 << 20

func (c *Counter) add(newLines, size int64, up *CountUpdate) {
	c.lines += newLines
	c.off = size
	c.known = true
	up.Lines, up.Size, up.Grew = c.lines, size, newLines > 0
}

// hostCountScript counts newlines in byte ranges of files on the host, all
// files at once (host/count.sh): "index count size" per file, the count
// exact at that size, or "index ! reason". Files and numbers come as
// arguments, never inside the script.
var hostCountScript = HostScript("count.sh")

type rangeCount struct {
	c       *Counter
	pl      countPlan
	updated *CountUpdate
	rd      fileReads // how this poll reads c's file
}

// hostCountArgv builds one exec for many files.
func hostCountArgv(rs []rangeCount) []string {
	argv := []string{"sh", "-c", hostCountScript, "synthwatch-count"}
	for _, r := range rs {
		argv = append(argv, r.c.Path, strconv.FormatInt(r.c.off+1, 10), strconv.FormatInt(r.pl.n, 10))
	}
	return argv
}

// hostCount is one file's answer: its newline count up to size, or why it
// could not be counted.
type hostCount struct {
	lines, size int64
	err         string
}

func parseHostCounts(out []byte, want int) ([]hostCount, error) {
	res := make([]hostCount, want)
	seen := make([]bool, want)
	n := 0
	for _, line := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		i, err1 := strconv.Atoi(f[0])
		if err1 != nil || i < 1 || i > want || seen[i-1] {
			return nil, fmt.Errorf("host count: bad line %q", line)
		}
		if f[1] == "!" {
			res[i-1] = hostCount{err: strings.Join(f[2:], " ")}
		} else {
			c, err2 := strconv.ParseInt(f[1], 10, 64)
			var err3 error
			var sz int64
			if len(f) == 3 {
				sz, err3 = strconv.ParseInt(f[2], 10, 64)
			}
			if len(f) != 3 || err2 != nil || err3 != nil {
				return nil, fmt.Errorf("host count: bad line %q", line)
			}
			res[i-1] = hostCount{lines: c, size: sz}
		}
		seen[i-1] = true
		n++
	}
	if n != want {
		return nil, fmt.Errorf("host count: %d answers for %d files: %q", n, want, out)
	}
	return res, nil
}
