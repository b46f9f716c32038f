// Package servers is the servers' part of a poll: each server's log tail
// and the probes' answers folded into its state, judged into the
// Snapshot's servers, with their events in the timeline. The Watcher
// composes it: Probe beside the host's reads, FoldTails and FoldLines with
// the poll's tails, FoldReads, Judge and Figures, then View.
package servers

import (
	"math"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/display"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
)

// Set is the servers' part of a poll: each server's log tail and the
// probes' answers (/metrics, /health, a router's /workers), folded into
// each server's state (srvWatch) and judged into its state and figures,
// with their events in the timeline. Its log lines fold in serverlog.go,
// its probes in servers.go and router.go, its judgements in serverview.go.
type Set struct {
	// Settled: the set has taken the manifest's list into account (the
	// Watcher's to say, for it reads pipeline.toml)
	Settled bool

	list  []*srvWatch // the host's servers (servers.go); never empty
	first *serverState
	thr   *display.Samples // the host's generation throughput, for the sparkline
	figs  figureState
	lines *snapshot.Ring     // the servers' log lines for display (the logs part's)
	zone  Zone               // the log lines' times in the host's zone
	tl    *timeline.Timeline // the servers' events: their logs', the probes', the router's
	root  string
	now   func() time.Time
	pane  int64       // a server log's last bytes a first read sends as they are (the rest digested)
	web   *serverHTTP // the probes' requests through the host (alive.go)

	// this poll's judgement (judge, then figures), which view reads
	shown   snapshot.Server   // the one server, or the host's total
	each    []snapshot.Server // each server, a router's replicas after it
	several bool              // several servers or a router: each is shown too
}

// Zone stamps a server log record: its own time read in the host's zone,
// else ref (the log's mtime) or now (the events part's Recorder.ServerTime).
type Zone func(ev parse.ServerEvent, ref, now time.Time) time.Time

// Config is what a Set is made of: the host its probes go through, the
// root its logs are relative to, and what it shares with the other parts.
type Config struct {
	Host     remote.Host
	Root     string
	Now      func() time.Time
	History  int                // throughput samples kept for the sparkline
	Lines    *snapshot.Ring     // the display ring its log lines go to
	Timeline *timeline.Timeline // where its events go
	Zone     Zone
	Pane     int64 // a server log's last bytes a first read sends as they are
}

// New is a Set watching specs.
func New(c Config, specs []Spec) *Set {
	sv := &Set{thr: display.NewSamples(c.History), zone: c.Zone, root: c.Root, now: c.Now, lines: c.Lines,
		pane: c.Pane, web: newServerHTTP(c.Host), tl: c.Timeline}
	sv.SetSpecs(specs)
	return sv
}

// FoldTails notes, for each server, whether its log exists and grew.
func (sv *Set) FoldTails(res remote.PollResult, now time.Time, polls int) {
	for _, s := range sv.list {
		sv.foldServerTail(s, res, now, polls)
	}
}

// FoldLines folds each server log's new lines (foldServerLines).
func (sv *Set) FoldLines(res remote.PollResult, now time.Time, flush bool, polls int) {
	for _, s := range sv.list {
		sv.foldServerLines(s, res, now, flush, polls)
	}
}

// Gap is a poll with no sample: a gap in the sparkline, not a zero.
func (sv *Set) Gap() { sv.thr.Add(math.NaN()) }

// Throughput is the host's generation throughput, oldest first.
func (sv *Set) Throughput() []float64 { return sv.thr.Values() }

// URLs are the watched servers' URLs, in order (the first is probed first).
func (sv *Set) URLs() []string {
	out := make([]string, len(sv.list))
	for i, s := range sv.list {
		out[i] = s.spec.URL
	}
	return out
}

// Shown is the server this poll judged: the one server, or the host's
// total.
func (sv *Set) Shown() snapshot.Server { return sv.shown }

// Judge folds this poll's probes and logs into each server's state and
// figures, their events and the throughput history, and keeps them for view.
func (sv *Set) Judge(reads []Read, now time.Time, waiting bool) {
	total, each := sv.judgeEach(reads, now, waiting)
	sv.several = len(each) > 1 || each[0].Role == snapshot.RoleRouter
	if !sv.several {
		total.Name, total.Role = "", "" // one server: the object as it always was, with the URL it probed
	}
	if total.Source != "" && !total.FiguresStale {
		sv.thr.Add(total.GenThroughput)
	} else {
		sv.thr.Add(math.NaN())
	}
	total.Throughput = sv.thr.Values()
	sv.shown, sv.each = total, each
}

// View is the servers as this poll judged them: the Snapshot's server and,
// with several, its servers.
func (sv *Set) View() (snapshot.Server, []snapshot.Server) {
	if !sv.several {
		return sv.shown, nil
	}
	return sv.shown, append([]snapshot.Server(nil), sv.each...)
}

// Retractions is the first server's retractions so far (its log's), which
// the baseline names as a drop's cause when they rise.
func (sv *Set) Retractions() int { return sv.first.retractions }
