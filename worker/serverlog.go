package worker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/synthwatch/synthwatch/parse"
)

// The server log is read backwards in 1 MiB blocks, each block searched
// forward with bytes.Index (SIMD) and its last match tried first, so the
// scan stops at the newest "Using KV cache dtype:" line. A log where the
// line is absent is read once in full; a log scanned before is read only
// from where the last scan stopped (kvLogs), since the worker asks once per
// category.
const kvScanBlock = 1 << 20

// maxKVLine bounds the line carried across a block boundary: the dtype line
// is short, and a longer line is skipped without being held.
const maxKVLine = 64 << 10

var kvLogs = struct {
	sync.Mutex
	m map[string]kvLogScan
}{m: map[string]kvLogScan{}}

type kvLogScan struct {
	dev, ino uint64
	scanned  int64 // offset just past the last newline scanned
	dtype    string
}

// lastKVCacheDtype returns the dtype of the server log's last
// "Using KV cache dtype: torch.X" line ("float8_e4m3fn"), or "" when the log
// has none or does not exist. Only whole lines (ending in a newline) count.
func lastKVCacheDtype(path string) (string, error) {
	f, err := openInput(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("server log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("server log: %w", err)
	}
	var dev, ino uint64
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(sys.Dev), sys.Ino
	}
	size := st.Size()
	kvLogs.Lock()
	prev, have := kvLogs.m[path]
	kvLogs.Unlock()
	from := int64(0)
	if have && prev.dev == dev && prev.ino == ino && prev.scanned <= size {
		from = prev.scanned
	} else {
		prev = kvLogScan{}
	}
	d, end, err := scanKVCacheDtype(f, from, size, kvScanBlock)
	if err != nil {
		return "", fmt.Errorf("server log %s: %w", path, err)
	}
	if d == "" {
		d = prev.dtype
	}
	kvLogs.Lock()
	kvLogs.m[path] = kvLogScan{dev: dev, ino: ino, scanned: end, dtype: d}
	kvLogs.Unlock()
	return d, nil
}

// scanKVCacheDtype looks for the last KV dtype line in [from, size) of r,
// where from is a line start. It returns the dtype ("" if none) and the
// offset just past the region's last newline (from if it has none).
func scanKVCacheDtype(r io.ReaderAt, from, size int64, block int) (dtype string, end int64, err error) {
	needle := []byte(parse.KVDtypeNeedle)
	buf := make([]byte, 0, block+maxKVLine+1)
	var carry []byte // the rest of the line that starts before pos, newline included
	end = -1
	skip := true // bytes after buf's last newline are not a whole line: at the file's end, or of an over-long line
	var hits []int
	for pos := size; pos > from; {
		start := max(from, pos-int64(block))
		n, rerr := r.ReadAt(buf[:pos-start], start)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return "", from, rerr
		}
		if int64(n) < pos-start { // the file shrank under us: what is there is enough
			return "", max(end, from), nil
		}
		b := append(buf[:n], carry...)
		if skip {
			j := bytes.LastIndexByte(b, '\n')
			if j < 0 {
				carry, pos = carry[:0], start
				continue
			}
			if end < 0 {
				end = start + int64(j) + 1
			}
			b, skip = b[:j+1], false
		}
		whole := b // whole lines of b
		if start > from {
			i := bytes.IndexByte(b, '\n')
			if i < 0 { // all of b is inside one line
				i = len(b) - 1
			}
			whole = b[i+1:]
			if i+1 > maxKVLine {
				carry, skip = carry[:0], true
			} else {
				carry = append(make([]byte, 0, i+1), b[:i+1]...)
			}
		}
		hits = hits[:0]
		for off := 0; ; {
			k := bytes.Index(whole[off:], needle)
			if k < 0 {
				break
			}
			hits = append(hits, off+k)
			off += k + len(needle)
		}
		for h := len(hits) - 1; h >= 0; h-- {
			ls := bytes.LastIndexByte(whole[:hits[h]], '\n') + 1
			le := hits[h] + bytes.IndexByte(whole[hits[h]:], '\n')
			if d, ok := parse.KVCacheDtype(string(whole[ls:le])); ok {
				return d, end, nil
			}
		}
		pos = start
	}
	if end < 0 {
		end = from
	}
	return "", end, nil
}
