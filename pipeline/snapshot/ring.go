package snapshot

import "sync"

// Ring is a bounded buffer of display lines.
type Ring struct {
	mu    sync.Mutex
	lines []string
	start int
	max   int
	total int64
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
