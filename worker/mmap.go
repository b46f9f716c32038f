package worker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// errNoMap says the file could not be mapped: read it instead.
var errNoMap = errors.New("file cannot be mapped")

// mapWindow bounds how much of a file is mapped at once, so the resident
// pages of a scan stay small however large the file.
var mapWindow int64 = 32 << 20

// eachMappedLine calls fn for every line of f in [start, end) (start at a
// line start), the last one even without a final newline, from windows of
// the file mapped read-only. A line is valid only during the call. If the
// file shrinks under the scan, the fault becomes an error, not a crash.
func eachMappedLine(f *os.File, start, end int64, fn func([]byte)) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("read %s: the file changed under the scan: %v", f.Name(), r)
		}
	}()
	page := int64(os.Getpagesize())
	win := mapWindow
	for pos := start; pos < end; {
		off := pos &^ (page - 1)
		n := min(win, end-off)
		m, err := syscall.Mmap(int(f.Fd()), off, int(n), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			if pos == start {
				return errNoMap
			}
			return fmt.Errorf("map %s: %w", f.Name(), err)
		}
		d := m[pos-off:]
		for {
			i := bytes.IndexByte(d, '\n')
			if i < 0 {
				break
			}
			fn(d[:i])
			d = d[i+1:]
		}
		last := off+n == end
		if last && len(d) > 0 {
			fn(d)
		}
		next := off + n - int64(len(d))
		_ = syscall.Munmap(m)
		if last {
			return nil
		}
		if next == pos { // one line longer than the window
			win *= 2
		}
		pos = next
	}
	return nil
}
