package remote

import (
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// A report in the morning reads every record of the night once, unless a
// digest before it kept the records' stamps (digest/keep.go): a gigabyte
// took 1.8x the habit at 50 ms, and 1.05x kept. A dashboard left watching
// the night has its agent on the host all along, which sums the same
// records' tokens as they come: it keeps the report's stamps of them too,
// now and then, so the report after it reads only what is newer. The
// agent cannot import the digest (remote runs on the laptop too): the
// host binary's agent command passes it in (StampKeeper).

// StampKeeper keeps a report's stamps of the records files named, reading
// only what each kept file does not reach (digest.KeepStamps).
type StampKeeper func(records []string)

var (
	// stampsFirst is how long an agent answers before it keeps stamps:
	// a one-shot status never does, and a dashboard's cold token sums go
	// first. stampsEvery is the gap between two keeps after it: a
	// report reads at most that much of the records again, and each
	// keep with new records writes its kept file again (8.5 MB a
	// gigabyte of records).
	stampsFirst = time.Minute
	stampsEvery = 10 * time.Minute
)

// stamper runs the StampKeeper, one at a time, at most every stampsEvery,
// in the background: an answer never waits for it.
type stamper struct {
	keep    StampKeeper
	started time.Time
	mu      sync.Mutex
	last    time.Time // when the last keep began
	running bool
	done    chan struct{} // closed when the last keep ended (tests)
}

func newStamper(keep StampKeeper) *stamper {
	return &stamper{keep: keep, started: time.Now()}
}

// after a request: keep the stamps of the records files ts summed, when
// one is due and none is under way.
func (sp *stamper) after(ts *tokenSums) {
	if sp == nil || sp.keep == nil {
		return
	}
	now := time.Now()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.running || now.Sub(sp.started) < stampsFirst || !sp.last.IsZero() && now.Sub(sp.last) < stampsEvery || ts.summingAhead() {
		return // a cold sum going on in the background has the host's cores first
	}
	paths := ts.recordsSummed()
	if len(paths) == 0 {
		return
	}
	sp.running, sp.last = true, now
	done := make(chan struct{})
	sp.done = done
	go func() {
		defer close(done)
		sp.keep(paths)
		sp.mu.Lock()
		sp.running = false
		sp.mu.Unlock()
	}()
}

// recordsSummed are the records files (raw_responses.jsonl) this agent
// summed, sorted.
func (ts *tokenSums) recordsSummed() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []string
	for p := range ts.summed {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// noteSummed marks p summed by this agent, when it is a records file
// (ts.mu held).
func (ts *tokenSums) noteSummed(p string) {
	if filepath.Base(p) != parse.RawFile {
		return
	}
	if ts.summed == nil {
		ts.summed = map[string]struct{}{}
	}
	ts.summed[p] = struct{}{}
}

// summingAhead: a cut range is being summed on in the background.
func (ts *tokenSums) summingAhead() bool {
	ts.mu.Lock()
	a := ts.ahead
	ts.mu.Unlock()
	if a == nil {
		return false
	}
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}
