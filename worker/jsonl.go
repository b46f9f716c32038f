package worker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Scan is what a JSONL output file holds: every record's id (by its
// canonical key, parse.RecordHead.Key) and completion tokens.
type Scan struct {
	Tokens      map[string]int64 // key → completion tokens (of the first record with that key)
	Lines       int
	Duplicates  int      // records whose id an earlier line already had (written by some other tool)
	BadLines    int      // lines that are not one valid JSON object with an id: their ids are redone
	BadExamples []string // up to 3: "line N: reason", sanitized
	Size        int64    // bytes after repair
	Cut         int64    // bytes of torn tail removed
	CutPreview  string

	bad []badLine // the first unreadable lines, for BadExamples
}

const maxExamples = 3

// badExample is "line N: reason" for the log, sanitized and short.
func badExample(n int, err error) string {
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120] + "…"
	}
	return fmt.Sprintf("line %d: %s", n, parse.SanitizeString(msg))
}

// RepairTail truncates path to its last newline, so that a line torn by a
// crash never stays in front of new records. It returns the bytes cut and
// the start of what was cut, for the log. A missing file is not an error.
func RepairTail(path string) (cut int64, preview string, err error) {
	f, err := openOutput(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("repair %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, "", fmt.Errorf("repair %s: %w", path, err)
	}
	size := st.Size()
	if size == 0 {
		return 0, "", nil
	}
	keep, err := lastNewlineEnd(f, size)
	if err != nil {
		return 0, "", fmt.Errorf("repair %s: %w", path, err)
	}
	if keep == size {
		return 0, "", nil
	}
	head := make([]byte, min(size-keep, 80))
	_, _ = f.ReadAt(head, keep)
	if err := f.Truncate(keep); err != nil {
		return 0, "", fmt.Errorf("repair %s: truncate torn tail: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, "", fmt.Errorf("repair %s: %w", path, err)
	}
	return size - keep, parse.SanitizeString(string(head)), nil
}

// lastNewlineEnd finds the offset just past the last '\n', reading backwards
// in blocks so a torn 15 KB line does not mean reading the file.
func lastNewlineEnd(f *os.File, size int64) (int64, error) {
	const block = 64 << 10
	buf := make([]byte, block)
	for end := size; end > 0; {
		start := max(end-block, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// ScanFile repairs a torn tail, then reads every line with
// parse.ParseRecordHead: the worker's own (sealed) records without decoding
// them, any other line in full, so a line that is not valid JSON is bad and
// its id is not done. A large file is read in sections on several cores;
// the sections are merged in file order, so the result is the one a single
// pass gives (TestScanSectionsMatchOnePass).
func ScanFile(path string) (Scan, error) {
	s := Scan{Tokens: map[string]int64{}}
	cut, preview, err := RepairTail(path)
	if err != nil {
		return s, err
	}
	s.Cut, s.CutPreview = cut, preview
	f, err := openOutput(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("scan %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return s, fmt.Errorf("scan %s: %w", path, err)
	}
	s.Size = st.Size()
	bounds, err := sectionBounds(f, s.Size, scanWorkers(s.Size))
	if err != nil {
		return s, fmt.Errorf("scan %s: %w", path, err)
	}
	parts := make([]Scan, len(bounds)-1)
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[i], errs[i] = scanSection(f, bounds[i], bounds[i+1])
		}()
	}
	wg.Wait()
	for i, p := range parts {
		if errs[i] != nil {
			return s, fmt.Errorf("scan %s: %w", path, errs[i])
		}
		s.merge(p)
	}
	for _, b := range s.bad {
		s.BadExamples = append(s.BadExamples, badExample(b.line, b.err))
	}
	return s, nil
}

// scanSectionMin is the least a section holds: below it, one core is faster.
var scanSectionMin int64 = 64 << 20

// scanWorkers is how many sections a file of size bytes is read in.
func scanWorkers(size int64) int {
	return int(max(min(int64(runtime.GOMAXPROCS(0)), 8, size/scanSectionMin), 1))
}

// sectionBounds splits [0, size) into n ranges that start at line starts.
func sectionBounds(f io.ReaderAt, size int64, n int) ([]int64, error) {
	bounds := []int64{0}
	for i := 1; i < n; i++ {
		b, err := nextLineStart(f, size*int64(i)/int64(n), size)
		if err != nil {
			return nil, err
		}
		if b > bounds[len(bounds)-1] && b < size {
			bounds = append(bounds, b)
		}
	}
	return append(bounds, size), nil
}

// nextLineStart is the offset just past the first '\n' at or after off.
func nextLineStart(f io.ReaderAt, off, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for off < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		off += int64(n)
	}
	return size, nil
}

// scanSection reads the whole lines of [start, end); line numbers count
// from start. It reads the file mapped, which saves the copy read(2) makes
// (the scan then beats wc -l); where mapping fails it reads as usual.
func scanSection(f *os.File, start, end int64) (Scan, error) {
	err := errNoMap
	var sc Scan
	if useMap {
		sc, err = scanLines(func(fn func([]byte)) error { return eachMappedLine(f, start, end, fn) })
	}
	if errors.Is(err, errNoMap) {
		return scanLines(func(fn func([]byte)) error {
			return eachLine(io.NewSectionReader(f, start, end-start), fn)
		})
	}
	return sc, err
}

// useMap is false only in tests, for the plain way to compare with.
var useMap = true

// scanLines folds the lines that each hands it into a Scan.
func scanLines(each func(func([]byte)) error) (Scan, error) {
	s := Scan{Tokens: map[string]int64{}}
	err := each(func(line []byte) {
		s.Lines++
		h, err := parse.ParseRecordHead(line)
		if err != nil {
			if len(bytes.TrimSpace(line)) == 0 {
				err = errors.New("blank line")
			}
			s.BadLines++
			if len(s.bad) < maxExamples {
				s.bad = append(s.bad, badLine{s.Lines, err})
			}
			return
		}
		if _, dup := s.Tokens[h.Key]; dup {
			s.Duplicates++
			return
		}
		s.Tokens[h.Key] = h.CompletionTokens
	})
	return s, err
}

// badLine is one unreadable line, numbered from the start of its section.
type badLine struct {
	line int
	err  error
}

// merge appends the scan of the section that follows s's lines.
func (s *Scan) merge(p Scan) {
	for _, b := range p.bad {
		if len(s.bad) < maxExamples {
			s.bad = append(s.bad, badLine{b.line + s.Lines, b.err})
		}
	}
	s.Lines += p.Lines
	s.BadLines += p.BadLines
	s.Duplicates += p.Duplicates
	if len(s.Tokens) == 0 {
		s.Tokens = p.Tokens
		return
	}
	for k, t := range p.Tokens {
		if _, dup := s.Tokens[k]; dup {
			s.Duplicates++ // the earlier section's record is the first
			continue
		}
		s.Tokens[k] = t
	}
}

// match compares the records with the prompts: done is how many prompts
// have a record, tokens the completion tokens of those records, and stale
// how many record ids no prompt has.
func (s Scan) match(p promptSet) (done int, tokens int64, stale int) {
	for k, t := range s.Tokens {
		if _, ok := p.keys[k]; ok {
			done++
			tokens += t
		} else {
			stale++
		}
	}
	return done, tokens, stale
}

// eachLine calls fn for every line of r, the last one even without a final
// newline (RepairTail has removed such a tail from our own output files).
// The line is valid only during the call. A second goroutine reads ahead,
// so the copy from the page cache overlaps the work on each line (the seal
// check of the resume scan).
func eachLine(r io.Reader, fn func([]byte)) error {
	const chunkSize, chunks = 4 << 20, 3
	type chunk struct {
		b   []byte
		n   int
		err error
	}
	free := make(chan []byte, chunks)
	full := make(chan chunk, chunks)
	for range chunks {
		free <- make([]byte, chunkSize)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(full)
		for {
			var b []byte
			select {
			case b = <-free:
			case <-stop:
				return
			}
			n, err := r.Read(b)
			full <- chunk{b, n, err}
			if err != nil {
				return
			}
		}
	}()
	var carry []byte // a line that runs across chunks
	for c := range full {
		data := c.b[:c.n]
		start := 0
		if len(carry) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				carry = append(carry, data...)
			} else {
				carry = append(carry, data[:i]...)
				fn(carry)
				carry = carry[:0]
				start = i + 1
			}
		}
		if len(carry) == 0 {
			for {
				i := bytes.IndexByte(data[start:], '\n')
				if i < 0 {
					break
				}
				fn(data[start : start+i])
				start += i + 1
			}
			carry = append(carry, data[start:]...)
		}
		free <- c.b
		if errors.Is(c.err, io.EOF) {
			if len(carry) > 0 {
				fn(carry)
			}
			return nil
		}
		if c.err != nil {
			return c.err
		}
	}
	return nil
}

// Appender appends whole lines to a JSONL file: each record is one write
// call, a failed write is rolled back so no partial line stays, and fsync
// runs at most once a second and at Close.
type Appender struct {
	mu       sync.Mutex
	f        *os.File
	path     string
	size     int64
	dirty    bool
	lastSync time.Time
	// guard, if set, is asked before every write: the worker's claim on the
	// root (Lock.Held), so no line lands once that claim is in doubt
	guard func() error
}

// OpenAppender opens path for appending, creating it if needed. Call
// RepairTail (or ScanFile) first.
func OpenAppender(path string) (*Appender, error) {
	f, err := openOutput(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &Appender{f: f, path: path, size: st.Size(), lastSync: time.Now()}, nil
}

// Append writes one line, which must end with '\n'.
func (a *Appender) Append(line []byte) error {
	if len(line) == 0 || line[len(line)-1] != '\n' {
		return fmt.Errorf("append %s: record without final newline", a.path)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.guard != nil {
		if err := a.guard(); err != nil {
			return fmt.Errorf("append %s: %w", a.path, err)
		}
	}
	n, err := a.f.Write(line)
	if err == nil && n == len(line) {
		a.size += int64(n)
		a.dirty = true
		return nil
	}
	if err == nil {
		err = io.ErrShortWrite
	}
	// Take back a partial line, so the file still holds only whole records.
	if terr := a.f.Truncate(a.size); terr != nil {
		return fmt.Errorf("append %s: %w (and could not remove the partial line: %v)", a.path, err, terr)
	}
	return fmt.Errorf("append %s: %w", a.path, err)
}

// MaybeSync fsyncs if something was written and a second has passed.
func (a *Appender) MaybeSync() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.dirty || time.Since(a.lastSync) < time.Second {
		return nil
	}
	return a.syncLocked()
}

func (a *Appender) syncLocked() error {
	a.lastSync = time.Now()
	a.dirty = false
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", a.path, err)
	}
	return nil
}

// Close fsyncs and closes.
func (a *Appender) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.syncLocked()
	if cerr := a.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", a.path, cerr)
	}
	return err
}
