package digest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/synthwatch/synthwatch/parse"
)

// maxLine caps one line held in memory. Longer lines (never a record the
// worker writes) are skipped whole and counted, so memory stays bounded
// whatever a file holds.
const maxLine = 64 << 20

// eachLine streams path line by line, without the '\n', to fn. The slice
// is only valid during the call. complete is false for a last line with no
// '\n' (a torn tail still being written). It returns the bytes read and the
// lines that were too long; a missing file reads as empty.
func eachLine(path string, fn func(line []byte, complete bool)) (read int64, long int, err error) {
	sc, err := scanLines(path, 0, fn)
	return sc.read, sc.long, err
}

// lineScan is what scanLines read.
type lineScan struct {
	read int64 // bytes read
	end  int64 // where the last whole line ends: from + the whole lines' bytes
	long int   // lines too long, skipped (the torn tail's too)
	// longWhole are the long lines before end
	longWhole int
}

// scanLines is eachLine from byte from, a line's start.
func scanLines(path string, from int64, fn func(line []byte, complete bool)) (lineScan, error) {
	f, err := openFrom(path, from)
	if f == nil {
		return lineScan{end: from}, err
	}
	defer f.Close()
	return scanFile(f, path, from, fn)
}

// scanFile is scanLines of f, open at from.
func scanFile(f *os.File, path string, from int64, fn func(line []byte, complete bool)) (lineScan, error) {
	sp := splitter{sc: lineScan{end: from}, from: from, fn: fn}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		chunk, err := r.ReadSlice('\n')
		sp.sc.read += int64(len(chunk))
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			sp.more(chunk)
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return sp.sc, fmt.Errorf("digest: read %s: %w", path, err)
		}
		sp.last(chunk, err == nil)
		if err != nil {
			return sp.sc, nil
		}
	}
}

// openFrom opens path at from: nil and no error for a missing file.
func openFrom(path string, from int64) (*os.File, error) {
	f, err := parse.OpenRegular(path) // a FIFO is an error, not a read that waits for a writer
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("digest: %w", err)
	}
	if from > 0 {
		if _, err := f.Seek(from, io.SeekStart); err != nil {
			f.Close()
			return nil, fmt.Errorf("digest: %w", err)
		}
	}
	return f, nil
}

// splitter puts a line read in chunks together, up to maxLine; a longer
// one is skipped and counted.
type splitter struct {
	sc       lineScan
	from     int64
	fn       func(line []byte, complete bool)
	big      []byte
	skipping bool
}

// more takes a chunk of a line whose end is still to come.
func (sp *splitter) more(chunk []byte) {
	if !sp.skipping && len(sp.big)+len(chunk) <= maxLine {
		sp.big = append(sp.big, chunk...)
	} else if !sp.skipping {
		sp.skipping, sp.big = true, sp.big[:0]
		sp.sc.long++
	}
}

// last takes a line's last chunk: with its '\n' when complete.
func (sp *splitter) last(chunk []byte, complete bool) {
	line := chunk
	if len(sp.big) > 0 {
		line = append(sp.big, chunk...)
	}
	if complete {
		line = line[:len(line)-1]
	}
	tooLong := !sp.skipping && len(line) > maxLine
	if tooLong {
		sp.sc.long++
	} else if !sp.skipping && (complete || len(line) > 0) {
		sp.fn(line, complete)
	}
	if complete {
		sp.sc.end = sp.from + sp.sc.read
		if sp.skipping || tooLong {
			sp.sc.longWhole++
		}
	}
	sp.big, sp.skipping = sp.big[:0], false
}
