package snapshot

import (
	"slices"
	"sync"
)

// Ring is a bounded buffer of display lines.
type Ring struct {
	mu    sync.Mutex
	lines []string
	start int
	max   int
	total int64
	marks []*Mark // open places for older lines read later (InsertAt)
	seq   uint64
}

// Mark is a place in a Ring, before the next line added, where lines
// read later but older than those after it go (InsertAt): a log's first
// read sends a screen's lines, the ones before them come a poll after.
type Mark struct {
	at  int64  // the index, among every line added, of the line after it
	seq uint64 // marks at one place: the earlier one's lines go first
}

// NewRing keeps the newest max lines.
func NewRing(max int) *Ring { return &Ring{max: max} }

// Add appends a line, dropping the oldest beyond the cap.
func (r *Ring) Add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if len(r.lines) < r.max {
		r.lines = append(r.lines, s)
		return
	}
	r.lines[r.start] = s
	r.start = (r.start + 1) % r.max
}

// AddEach adds n lines, asking line(i) only for those the ring keeps: a
// first read of 20,000 log lines makes the newest max of them, not all.
func (r *Ring) AddEach(n int, line func(i int) string) {
	skip := max(0, n-r.max)
	r.mu.Lock()
	r.total += int64(skip)
	r.mu.Unlock()
	for i := skip; i < n; i++ {
		r.Add(line(i))
	}
}

// Lines returns the kept lines, oldest first.
func (r *Ring) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.lines))
	out = append(out, r.lines[r.start:]...)
	return append(out, r.lines[:r.start]...)
}

// Total is how many lines were ever added.
func (r *Ring) Total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// Mark opens a place before the next line added, for InsertAt.
func (r *Ring) Mark() *Mark {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	m := &Mark{at: r.total, seq: r.seq}
	r.marks = append(r.marks, m)
	return m
}

// Release closes m: no lines will come for it.
func (r *Ring) Release(m *Mark) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.marks = slices.DeleteFunc(r.marks, func(o *Mark) bool { return o == m })
}

// InsertAt puts lines, oldest first, at m (before the lines added after
// it) and closes m. The ring keeps its newest max lines: the oldest go,
// the inserted ones too when what came after m fills it. Later marks
// move with the lines after them.
func (r *Ring) InsertAt(m *Mark, lines []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.marks, m)
	if i < 0 {
		return // released, or used
	}
	r.marks = slices.Delete(r.marks, i, i+1)
	k := int64(len(lines))
	for _, o := range r.marks {
		if o.at > m.at || o.at == m.at && o.seq > m.seq {
			o.at += k
		}
	}
	pos := m.at - (r.total - int64(len(r.lines))) // m's place among the kept lines
	r.total += k
	if pos < 0 || k == 0 {
		return // what came after m fills the ring: older lines would go at once
	}
	kept := append(r.lines[r.start:len(r.lines):len(r.lines)], r.lines[:r.start]...)
	all := make([]string, 0, len(kept)+len(lines))
	all = append(append(append(all, kept[:pos]...), lines...), kept[pos:]...)
	r.lines, r.start = all[max(0, len(all)-r.max):], 0
}

// Cap is how many lines the ring keeps.
func (r *Ring) Cap() int { return r.max }
