// Package parse turns bytes from the host into typed values. It does no I/O:
// callers hand it chunks and lines, and it hands back events.
package parse

import "bytes"

// DefaultMaxLine is the default cap on one line, in bytes.
const DefaultMaxLine = 64 << 10

// Splitter cuts a byte stream into lines. It carries a partial last line
// between chunks and caps each line at Max bytes: a longer line is emitted
// once, truncated, and the rest of it up to the next newline is dropped, so a
// 10 MB line costs Max bytes of memory, not 10 MB.
type Splitter struct {
	Max      int
	buf      []byte // partial line carried between chunks (at most Max bytes)
	dropping bool   // inside an over-long line that was already emitted
}

// NewSplitter returns a Splitter with the given cap (DefaultMaxLine if max <= 0).
func NewSplitter(max int) *Splitter {
	if max <= 0 {
		max = DefaultMaxLine
	}
	return &Splitter{Max: max}
}

// Feed splits chunk into lines and calls emit for each whole line, without
// its newline. The line slice is only valid during the call.
func (s *Splitter) Feed(chunk []byte, emit func(line []byte, truncated bool)) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if s.dropping {
			if i < 0 {
				return
			}
			s.dropping = false
			chunk = chunk[i+1:]
			continue
		}
		if i < 0 {
			s.carry(chunk, emit)
			return
		}
		line := chunk[:i]
		chunk = chunk[i+1:]
		if len(s.buf) > 0 {
			room := s.Max - len(s.buf)
			if len(line) > room {
				s.buf = append(s.buf, line[:room]...)
				emit(s.buf, true)
			} else {
				s.buf = append(s.buf, line...)
				emit(s.buf, false)
			}
			s.buf = s.buf[:0]
			continue
		}
		if len(line) > s.Max {
			emit(line[:s.Max], true)
			continue
		}
		emit(line, false)
	}
}

// carry keeps a partial line for the next chunk; once it reaches Max it is
// emitted truncated and the rest of that line is dropped.
func (s *Splitter) carry(part []byte, emit func([]byte, bool)) {
	room := s.Max - len(s.buf)
	if len(part) <= room {
		s.buf = append(s.buf, part...)
		return
	}
	s.buf = append(s.buf, part[:room]...)
	emit(s.buf, true)
	s.buf = s.buf[:0]
	s.dropping = true
}

// Pending reports how many bytes of an unfinished line are carried.
func (s *Splitter) Pending() int { return len(s.buf) }

// Flush emits the carried partial line, if any, as a last line (at EOF).
func (s *Splitter) Flush(emit func(line []byte, truncated bool)) {
	if len(s.buf) > 0 {
		emit(s.buf, false)
		s.buf = s.buf[:0]
	}
	s.dropping = false
}

// Reset forgets any carried state, for a file that was truncated or replaced.
func (s *Splitter) Reset() {
	s.buf = s.buf[:0]
	s.dropping = false
}
