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
	f, err := parse.OpenRegular(path) // a FIFO is an error, not a read that waits for a writer
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("digest: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var big []byte
	skipping := false
	for {
		chunk, err := r.ReadSlice('\n')
		read += int64(len(chunk))
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if !skipping && len(big)+len(chunk) <= maxLine {
				big = append(big, chunk...)
			} else if !skipping {
				skipping, big = true, big[:0]
				long++
			}
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return read, long, fmt.Errorf("digest: read %s: %w", path, err)
		}
		complete := err == nil
		line := chunk
		if len(big) > 0 {
			line = append(big, chunk...)
		}
		if complete {
			line = line[:len(line)-1]
		}
		if !skipping && len(line) > maxLine {
			long++
		} else if !skipping && (complete || len(line) > 0) {
			fn(line, complete)
		}
		big, skipping = big[:0], false
		if !complete {
			return read, long, nil
		}
	}
}
