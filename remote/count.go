package remote

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Counter keeps an exact line count (what `wc -l` says) of a growing file.
// The first count of a big file runs on the host, bounded to a size snapshot,
// so nothing big crosses the wire; later counts look only at added bytes.
type Counter struct {
	Path string
	// RemoteAbove: when more than this many bytes are new, count them on the
	// host with head/tail/wc instead of reading them over SFTP.
	RemoteAbove int64

	off   int64
	lines int64
	known bool
}

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
	Reset   bool // the file shrank or vanished: counted again from 0
	Err     error
}

// Lines is the last exact count.
func (c *Counter) Lines() int64 { return c.lines }

// plan returns the byte range still to count, and whether to count it on
// the host.
func (c *Counter) plan(fi FileInfo, statErr error, up *CountUpdate) (off, n int64, onHost bool) {
	up.Path, up.Info = c.Path, fi
	if statErr != nil {
		if !errors.Is(statErr, fs.ErrNotExist) {
			up.Err = statErr
			up.Lines, up.Size = c.lines, c.off
			return 0, 0, false
		}
		up.Missing, up.Reset = true, c.off > 0
		c.off, c.lines, c.known = 0, 0, true
		return 0, 0, false
	}
	if fi.Size < c.off {
		up.Reset = true
		c.off, c.lines = 0, 0
	}
	up.Size = fi.Size
	n = fi.Size - c.off
	if n == 0 {
		c.known = true
		up.Lines = c.lines
		return 0, 0, false
	}
	return c.off, n, n > c.RemoteAbove
}

func (c *Counter) add(newLines, size int64, up *CountUpdate) {
	c.lines += newLines
	c.off = size
	c.known = true
	up.Lines, up.Size, up.Grew = c.lines, size, newLines > 0
}

// hostCountScript counts newlines in byte ranges of files on the host; the
// files and numbers come as arguments, never inside the script.
const hostCountScript = `while [ $# -ge 3 ]; do tail -c +"$2" -- "$1" | head -c "$3" | wc -l || echo x; shift 3; done`

type rangeCount struct {
	c       *Counter
	off, n  int64
	updated *CountUpdate
}

// hostCountArgv builds one exec for many files.
func hostCountArgv(rs []rangeCount) []string {
	argv := []string{"sh", "-c", hostCountScript, "synthwatch-count"}
	for _, r := range rs {
		argv = append(argv, r.c.Path, strconv.FormatInt(r.off+1, 10), strconv.FormatInt(r.n, 10))
	}
	return argv
}

func parseHostCounts(out []byte, want int) ([]int64, error) {
	fields := strings.Fields(string(bytes.TrimSpace(out)))
	if len(fields) != want {
		return nil, fmt.Errorf("host count: got %d numbers for %d files: %q", len(fields), want, out)
	}
	ns := make([]int64, want)
	for i, f := range fields {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("host count of file %d failed", i+1)
		}
		ns[i] = n
	}
	return ns, nil
}
