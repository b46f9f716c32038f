package snapshot

import (
	"fmt"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// ReplicaRow is one replica of the host's serving: a DP rank or vLLM
// engine of a server, a server of several, or an engine behind the
// gateway. Its state says how fresh its figures are:
//
//	up       read this poll (its own /metrics, the gateway's re-export, or a live log line)
//	STALE    not read this poll: the figures are from age_s ago
//	DOWN     not serving (the server is down or crashed, or the gateway's health checks fail)
//	unknown  nothing read of it yet
type ReplicaRow struct {
	Name          string   `json:"name"`   // host:port, with " dpN" or " engine N" for a rank
	Server        string   `json:"server"` // host:port of the server it is part of
	State         string   `json:"state"`
	Source        string   `json:"source,omitempty"` // metrics | gateway | log
	GenThroughput *float64 `json:"gen_throughput_tok_s"`
	RunningReqs   int      `json:"running_reqs"`
	QueueReqs     int      `json:"queue_reqs"`
	TokenUsage    *float64 `json:"token_usage"`
	CacheHitRate  *float64 `json:"cache_hit_rate,omitempty"`
	AgeSeconds    *float64 `json:"age_s,omitempty"`
	Reason        string   `json:"reason,omitempty"`
	Slow          bool     `json:"slow,omitempty"` // the replica the imbalance check names
}

// Replica row states.
const (
	RowUp      = "up"
	RowStale   = "STALE"
	RowDown    = "DOWN"
	RowUnknown = "unknown"
)

// Imbalance names the replica that lags the others.
type Imbalance struct {
	Replica string `json:"replica"`
	Reason  string `json:"reason"`
}

// RowHeader names Cells' columns.
var RowHeader = []string{"REPLICA", "STATE", "GEN tok/s", "RUN", "QUEUE", "KV", "HIT", "FROM"}

// Cells is a row as the panel and status write it, in RowHeader's order;
// "-" where there is no figure, a STALE row's state with its age.
func (r ReplicaRow) Cells() []string {
	pct := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100**p)
	}
	state := r.State
	if r.AgeSeconds != nil {
		state += " " + FormatDuration(time.Duration(*r.AgeSeconds)*time.Second)
	}
	gen, run, queue := "-", "-", "-"
	if r.GenThroughput != nil {
		gen = fmt.Sprintf("%.0f", *r.GenThroughput)
	}
	if r.State != RowDown && r.State != RowUnknown {
		run, queue = fmt.Sprint(r.RunningReqs), fmt.Sprint(r.QueueReqs)
	}
	src := r.Source
	if src == "" {
		src = "-"
	}
	return []string{parse.SanitizeString(r.Name), state, gen, run, queue, pct(r.TokenUsage), pct(r.CacheHitRate), src}
}
