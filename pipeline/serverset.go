package pipeline

import (
	"math"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// serverSet is the servers' part of a poll: each server's log tail and the
// probes' answers (/metrics, /health, a router's /workers), folded into
// each server's state (srvWatch) and judged into its state and figures,
// with their events in the timeline. Its log lines fold in serverlog.go,
// its probes in servers.go and router.go, its judgements in serverview.go.
type serverSet struct {
	list  []*srvWatch // the host's servers (servers.go); never empty
	set   bool        // the set has taken the manifest's list into account
	first *serverState
	thr   *samples // the host's generation throughput, for the sparkline
	figs  figureState
	lines *snapshot.Ring     // the servers' log lines for display (the logs part's)
	ev    *events            // the host's zone for the log lines' times (serverTime)
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

// judge folds this poll's probes and logs into each server's state and
// figures, their events and the throughput history, and keeps them for view.
func (sv *serverSet) judge(reads []serverRead, now time.Time, waiting bool) {
	total, each := sv.judgeEach(reads, now, waiting)
	sv.several = len(each) > 1 || each[0].Role == snapshot.RoleRouter
	if !sv.several {
		total.Name, total.Role = "", "" // one server: the object as it always was, with the URL it probed
	}
	if total.Source != "" && !total.FiguresStale {
		sv.thr.add(total.GenThroughput)
	} else {
		sv.thr.add(math.NaN())
	}
	total.Throughput = sv.thr.values()
	sv.shown, sv.each = total, each
}

// view is the servers as this poll judged them: the Snapshot's server and,
// with several, its servers.
func (sv *serverSet) view() (snapshot.Server, []snapshot.Server) {
	if !sv.several {
		return sv.shown, nil
	}
	return sv.shown, append([]snapshot.Server(nil), sv.each...)
}

// retractions is the first server's retractions so far (its log's), which
// the baseline names as a drop's cause when they rise.
func (sv *serverSet) retractions() int { return sv.first.retractions }
