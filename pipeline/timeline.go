package pipeline

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sync"
)

// Timeline is the bounded event history. With a path it is also kept on
// disk (capped), so reopening the dashboard in the morning shows the night.
type Timeline struct {
	mu     sync.Mutex
	max    int
	events []Event
	path   string
}

// NewTimeline keeps up to max events; path "" keeps them in memory only.
func NewTimeline(max int, path string) *Timeline {
	t := &Timeline{max: max, path: path}
	if path != "" {
		t.load()
	}
	return t
}

// StatePath is ~/.local/state/synthwatch/<host>.jsonl (XDG_STATE_HOME honoured).
func StatePath(host string) string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".local", "state")
	}
	safe := []rune(host)
	for i, r := range safe {
		if r == '/' || r == 0 || r == '\\' {
			safe[i] = '_'
		}
	}
	return filepath.Join(dir, "synthwatch", string(safe)+".jsonl")
}

func (t *Timeline) load() {
	f, err := os.Open(t.path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			t.events = append(t.events, e)
		}
	}
	if len(t.events) > t.max {
		t.events = t.events[len(t.events)-t.max:]
	}
}

// Add records an event (and appends it to the file, rewriting it when it
// has grown to twice the cap).
func (t *Timeline) Add(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, e)
	if len(t.events) > t.max {
		t.events = append(t.events[:0:0], t.events[len(t.events)-t.max:]...)
	}
	if t.path == "" {
		return
	}
	_ = os.MkdirAll(filepath.Dir(t.path), 0o700)
	if st, err := os.Stat(t.path); err == nil && st.Size() > int64(t.max)*2*200 {
		t.rewrite()
		return
	}
	if f, err := os.OpenFile(t.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		line, _ := json.Marshal(e)
		f.Write(append(line, '\n'))
		f.Close()
	}
}

func (t *Timeline) rewrite() {
	tmp := t.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return
	}
	for _, e := range t.events {
		line, _ := json.Marshal(e)
		f.Write(append(line, '\n'))
	}
	f.Close()
	_ = os.Rename(tmp, t.path)
}

// Recent returns up to n of the newest events, oldest first.
func (t *Timeline) Recent(n int) []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n > len(t.events) {
		n = len(t.events)
	}
	return append([]Event{}, t.events[len(t.events)-n:]...)
}

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

// samples is a fixed ring of rate samples for sparklines.
type samples struct {
	v []float64
	i int
	n int
}

func newSamples(n int) *samples { return &samples{v: make([]float64, n)} }

func (s *samples) add(x float64) {
	s.v[s.i] = x
	s.i = (s.i + 1) % len(s.v)
	if s.n < len(s.v) {
		s.n++
	}
}

// values is oldest first; slots never filled are NaN (a gap, not a zero).
func (s *samples) values() []float64 {
	out := make([]float64, len(s.v))
	for k := range out {
		out[k] = math.NaN()
	}
	for k := 0; k < s.n; k++ {
		out[len(out)-s.n+k] = s.v[(s.i-s.n+k+len(s.v))%len(s.v)]
	}
	return out
}
