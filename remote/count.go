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
	ahead readAhead
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

// hostCountScript counts newlines in byte ranges of files on the host, all
// files at once. It prints "index count size" per file: the count is exact
// at that size. A whole file is read by wc directly, bracketed by two stats
// (if the size moved in between, the bounded pipe is used instead). Files
// and numbers come as arguments, never inside the script.
const hostCountScript = `i=0
while [ $# -ge 3 ]; do
  i=$((i+1))
  (
    f=$1 from=$2 n=$3
    if [ "$from" = 1 ]; then
      s1=$(stat -c %s -- "$f") && c=$(wc -l < "$f") && s2=$(stat -c %s -- "$f") &&
        [ "$s1" = "$s2" ] && { echo "$i $c $s1"; exit 0; }
    fi
    c=$(tail -c +"$from" -- "$f" | head -c "$n" | wc -l) && echo "$i $c $((from - 1 + n))"
  ) &
  shift 3
done
wait`

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

// hostCount is one file's answer: its newline count up to size.
type hostCount struct{ lines, size int64 }

func parseHostCounts(out []byte, want int) ([]hostCount, error) {
	res := make([]hostCount, want)
	seen := 0
	for _, line := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		i, err1 := strconv.Atoi(f[0])
		c, err2 := strconv.ParseInt(f[1], 10, 64)
		sz, err3 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || i < 1 || i > want || res[i-1].size != 0 {
			return nil, fmt.Errorf("host count: bad line %q", line)
		}
		res[i-1] = hostCount{c, sz}
		seen++
	}
	if seen != want {
		return nil, fmt.Errorf("host count: %d answers for %d files: %q", seen, want, out)
	}
	return res, nil
}
