// Package pipeline turns what remote reads and parse understands into one
// Snapshot: the job as the user needs to see it. It also holds the actions
// (launch, kill, resume, restart) as exact, quoted shell lines.
package pipeline

import "time"

// Snapshot is the whole job at one moment; `status --json` prints it
// (schema 1: fields may be added, never renamed).
type Snapshot struct {
	Schema     int        `json:"schema"`
	Time       time.Time  `json:"time"`
	Host       string     `json:"host"`
	Root       string     `json:"root"`
	Connection Connection `json:"connection"`
	Worker     Worker     `json:"worker"`
	Server     Server     `json:"server"`
	Categories []Category `json:"categories"`
	ETASeconds *float64   `json:"eta_s"`
	Warnings   []string   `json:"warnings"`
	Events     []Event    `json:"events"`
}

// Connection is the link to the host.
type Connection struct {
	State       string     `json:"state"` // connected | connecting | reconnecting | failed | local
	RTTms       float64    `json:"rtt_ms"`
	LastContact *time.Time `json:"last_contact"`
	Error       string     `json:"error,omitempty"`    // why the link is down: the last dial, handshake or auth error
	Drops       int        `json:"drops"`              // links lost since the dashboard connected
	Attempt     int        `json:"attempt,omitempty"`  // connection attempts so far while down
	NextTry     *time.Time `json:"next_try,omitempty"` // when the next attempt starts, while down
}

// Worker is the inference worker on the host.
type Worker struct {
	State     string     `json:"state"` // running | stopped | dead | unknown
	PID       int        `json:"pid,omitempty"`
	Category  string     `json:"category,omitempty"`
	Source    string     `json:"source,omitempty"` // worker.json | log
	Phase     string     `json:"phase,omitempty"`  // worker.json's own state: waiting_server, stopping, ...
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// Server is the SGLang (or vLLM) server.
type Server struct {
	State         string     `json:"state"` // ready | starting | crashed | down | unknown
	GenThroughput float64    `json:"gen_throughput_tok_s"`
	RunningReqs   int        `json:"running_reqs"`
	QueueReqs     int        `json:"queue_reqs"`
	TokenUsage    float64    `json:"token_usage"`
	CacheHitRate  *float64   `json:"cache_hit_rate"`
	Source        string     `json:"source"` // metrics | log | ""
	Dialect       string     `json:"dialect,omitempty"`
	LastCrash     string     `json:"last_crash,omitempty"`
	LastCrashAt   *time.Time `json:"last_crash_at,omitempty"`
	Retractions   int        `json:"retractions"`
	Throughput    []float64  `json:"-"` // recent gen throughput for a sparkline; NaN = no sample
}

// Category is one dataset category.
type Category struct {
	Name             string     `json:"name"`
	Class            string     `json:"class"`
	Done             int64      `json:"done"`
	Target           int64      `json:"target"`
	TargetSource     string     `json:"target_source,omitempty"` // worker.json | log | prompts
	Errors           int64      `json:"errors"`
	CompletionTokens *int64     `json:"completion_tokens"`
	TokenBudget      int64      `json:"token_budget,omitempty"`
	State            string     `json:"state"`
	RatePerMin       float64    `json:"rate_per_min"`
	TokPerSec        *float64   `json:"tok_per_s"`
	ETASeconds       *float64   `json:"eta_s"`
	LastGrowth       *time.Time `json:"last_growth"`
	Warnings         []string   `json:"warnings,omitempty"`
	Rates            []float64  `json:"-"` // recent rate history for sparklines; NaN = no sample
}

// Event is one line of the timeline.
type Event struct {
	Time     time.Time `json:"time"`
	Kind     string    `json:"kind"`
	Category string    `json:"category,omitempty"`
	Text     string    `json:"text"`
}

// Category states.
const (
	StatePending = "pending"
	StateRunning = "running"
	StateStalled = "stalled"
	StateDone    = "done"
	StateSkipped = "skipped"
	StateStopped = "stopped"
	StateFailed  = "failed"
	StateUnknown = "unknown"
)

// Final says whether a state gets no ETA and no stall.
func Final(state string) bool {
	return state == StateDone || state == StateSkipped || state == StateFailed
}
