// Package timeline is the night's event history: every part of the pipeline
// writes to it (Note, LogEvent, Add), the views read it (Recent).
package timeline

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// Timeline is the bounded event history, in time order. With a path it is
// also kept on disk (capped), so reopening the dashboard in the morning
// shows the night. An event with a Key is kept once: reading the same log
// again, in this session or the next, adds nothing.
type Timeline struct {
	mu     sync.Mutex
	max    int
	events []snapshot.Event
	keys   map[string]bool
	path   string
}

// New keeps up to max events; path "" keeps them in memory only.
func New(max int, path string) *Timeline {
	t := &Timeline{max: max, path: path, keys: map[string]bool{}}
	if path != "" {
		t.load()
	}
	return t
}

// Read is a timeline that starts with the events kept at path but
// keeps new ones in memory only (a one-shot status reads the history and
// leaves it as it was).
func Read(max int, path string) *Timeline {
	t := New(max, path)
	t.mu.Lock()
	t.path = ""
	t.mu.Unlock()
	return t
}

// StateDir is ~/.local/state/synthwatch (XDG_STATE_HOME honoured).
func StateDir() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "synthwatch")
}

// StatePath is the history file of one pipeline root on one host:
// StateDir()/<host>_<root>-<hash>.jsonl, the readable part reduced to
// letters, digits, '.', '_' and '-' (a safe name on every OS), the hash of
// host and root keeping two roots, or two spellings, apart.
func StatePath(host, root string) string {
	sum := sha256.Sum256([]byte(host + "\x00" + root))
	name := safeName(host)
	if r := safeName(root); r != "" {
		name += "_" + r
	}
	if len(name) > 80 {
		name = name[:80]
	}
	return filepath.Join(StateDir(), fmt.Sprintf("%s-%x.jsonl", strings.Trim(name, "._-"), sum[:4]))
}

// safeName keeps [A-Za-z0-9._-] and turns each run of anything else into
// one '_'.
func safeName(s string) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
			b.WriteRune(r)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.Trim(b.String(), "._-")
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
		var e snapshot.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && (e.Key == "" || !t.keys[e.Key]) {
			t.insert(e)
		}
	}
	t.trim()
}

// insert puts e after every event not later than it (the list stays in
// time order; events come mostly in order, so this is mostly an append).
func (t *Timeline) insert(e snapshot.Event) {
	i := len(t.events)
	for i > 0 && t.events[i-1].Time.After(e.Time) {
		i--
	}
	t.events = append(t.events, snapshot.Event{})
	copy(t.events[i+1:], t.events[i:])
	t.events[i] = e
	if e.Key != "" {
		t.keys[e.Key] = true
	}
}

// trim drops the oldest events beyond the cap.
func (t *Timeline) trim() {
	if len(t.events) <= t.max {
		return
	}
	drop := len(t.events) - t.max
	for _, e := range t.events[:drop] {
		if e.Key != "" {
			delete(t.keys, e.Key)
		}
	}
	t.events = append(t.events[:0:0], t.events[drop:]...)
}

// Add records an event (and appends it to the file, rewriting it when it
// has grown to twice the cap). An event whose Key is already kept is not
// added again; Add says whether it was.
func (t *Timeline) Add(e snapshot.Event) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Key != "" && t.keys[e.Key] {
		return false
	}
	t.insert(e)
	t.trim()
	if t.path == "" {
		return true
	}
	_ = os.MkdirAll(filepath.Dir(t.path), 0o700)
	if st, err := os.Stat(t.path); err == nil && st.Size() > int64(t.max)*2*200 {
		t.rewrite()
		return true
	}
	if f, err := os.OpenFile(t.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		line, _ := json.Marshal(e)
		f.Write(append(line, '\n'))
		f.Close()
	}
	return true
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

// Note adds an event at t, its text sanitised.
func (t *Timeline) Note(at time.Time, kind, cat, text string) {
	t.Add(snapshot.Event{Time: at.UTC(), Kind: kind, Category: cat, Text: parse.SanitizeString(text)})
}

// LogEvent records an event read from a log, at its log time, keyed so that
// reading the same line again (this session or the next) adds nothing.
func (t *Timeline) LogEvent(at time.Time, kind, text, msg string) {
	t.Add(snapshot.Event{Time: at.UTC(), Kind: kind, Text: parse.SanitizeString(text),
		Key: kind + "|" + at.UTC().Format(time.RFC3339Nano) + "|" + parse.SanitizeString(msg)})
}

// NotAfter is an event's time: at, or now when at is unknown or ahead of
// now (a host's clock, or a file's time, past this machine's).
func NotAfter(at, now time.Time) time.Time {
	if at.IsZero() || at.After(now) {
		return now
	}
	return at
}

// Recent returns up to n of the newest events, oldest first.
func (t *Timeline) Recent(n int) []snapshot.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n > len(t.events) {
		n = len(t.events)
	}
	return append([]snapshot.Event{}, t.events[len(t.events)-n:]...)
}
