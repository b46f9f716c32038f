package pipeline

import "time"

// serverSet is the servers' part of a poll: each server's log tail and the
// probes' answers (/metrics, /health, a router's /workers), folded into
// each server's state (srvWatch) and judged into its state and figures,
// with their events in the timeline. Its log lines fold in serverlog.go,
// its probes in servers.go and router.go, its views in serverview.go.
type serverSet struct {
	list  []*srvWatch // the host's servers (servers.go); never empty
	set   bool        // the set has taken the manifest's list into account
	first *serverState
	thr   *samples // the host's generation throughput, for the sparkline
	figs  figureState
	lines *Ring // the servers' log lines for display (the logs part's)
	ev    *events
	root  string
	now   func() time.Time
}
