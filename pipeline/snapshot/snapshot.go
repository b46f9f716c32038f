// Package snapshot is the schema of what pipeline's Watcher makes of a
// host: the Snapshot (status --json's, schema 1), the value types it
// holds, its named states and the pure helpers every view writes them
// with. It judges nothing and does no I/O: the pipeline fills it, and the
// views (tui, status, fleet) read it.
package snapshot

import (
	"math"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Snapshot is the whole job at one moment; `status --json` prints it
// (schema 1: fields may be added, never renamed).
type Snapshot struct {
	Schema     int        `json:"schema"`
	Time       time.Time  `json:"time"`
	Host       string     `json:"host"`
	Root       string     `json:"root"`
	Connection Connection `json:"connection"`
	Worker     Worker     `json:"worker"`
	Server     Server     `json:"server"` // the one server; with several (or a router), the host's total
	// Servers are each server, a router's replicas after it; only when
	// the host has several servers or a router
	Servers    []Server   `json:"servers,omitempty"`
	Categories []Category `json:"categories"`
	Vitals     Vitals     `json:"vitals"` // the host's GPUs, disk, load and memory, and the worker's RSS and CPU
	ETASeconds *float64   `json:"eta_s"`
	// ETAPart is what is known of the ETA when eta_s is null because a
	// class with work left has no rate yet (ETAText shows both)
	ETAPart *ETAPart `json:"eta_partial,omitempty"`
	// CompletionTokens is every category's completion tokens added up;
	// TokensPartial says a category has no figure yet (not in the sum);
	// TokensUnknown counts the records whose tokens are unknown (not in it).
	CompletionTokens int64 `json:"completion_tokens"`
	TokensPartial    bool  `json:"tokens_partial,omitempty"`
	// TokensSumming: the categories' tokens being summed, added up (nil:
	// none); the figure is partial until they are
	TokensSumming *Summing `json:"tokens_summing,omitempty"`
	// Capture is the next stage's disk for the records kept so far
	// (pipeline.toml's [capture]; parse.ForecastCapture), nil without one
	Capture       *parse.CaptureForecast `json:"capture,omitempty"`
	TokensUnknown int64                  `json:"tokens_unknown_records,omitempty"`
	// Spend is the night's: every category's summed (parse.NightSpend)
	Spend    *parse.Spend `json:"spend,omitempty"`
	Baseline Baseline     `json:"baseline"` // throughput against the night's own median (after 30 min of it)
	Warnings []string     `json:"warnings"` // the texts of Alerts, in order (schema 1: an array of strings)
	Alerts   []Warning    `json:"-"`        // the warnings with their kinds; add them with Warn
	Events   []Event      `json:"events"`
}

// ETAPart is a pipeline ETA without a whole figure: the seconds the
// classes with a rate still need, and the classes with work left and no
// rate, which add an unknown time.
type ETAPart struct {
	Seconds    float64  `json:"s"`
	Unmeasured []string `json:"unmeasured"`
}

// Warning is one warning of a Snapshot: a kind to pick it by, and its text.
type Warning struct {
	Kind WarningKind
	Text string
}

// WarningKind says what a warning is about, so a reader picks warnings by
// kind and not by the words of their text.
type WarningKind string

// Warning kinds.
const (
	WarnNoContact       WarningKind = "no_contact"        // the link is down: the figures are old or missing
	WarnWorkerJSONStale WarningKind = "worker_json_stale" // worker.json is old while its pid is alive
	WarnCategory        WarningKind = "category"          // a category's own warning (a cross-check, a count)
	WarnRoot            WarningKind = "root"              // the root is no pipeline root (no prepared/)
	WarnSlowReader      WarningKind = "slow_reader"       // many categories read by the fallback: install the Go agent
	// WarnManifest: pipeline.toml is there but could not be read or parsed
	// (EACCES, a FIFO, a directory, bad TOML), or another account can change
	// it and its servers are refused (pipeline/counts/manifesttrust.go). Every view
	// shows it, status exits 1 on it, and the categories are still found.
	WarnManifest WarningKind = "manifest"
	// WarnUnreadable: a file the poll reads is there but is no readable
	// regular file (a FIFO at run/worker.json): named, never read.
	WarnUnreadable WarningKind = "unreadable"
)

// Warn adds a warning, to Alerts and its text to Warnings.
func (s *Snapshot) Warn(kind WarningKind, text string) {
	s.Alerts = append(s.Alerts, Warning{Kind: kind, Text: text})
	s.Warnings = append(s.Warnings, text)
}

// ManifestError is the snapshot's manifest warning ("" when none): the
// one test every view (header, status, fleet) asks.
func ManifestError(s Snapshot) string {
	for _, a := range s.Alerts {
		if a.Kind == WarnManifest {
			return a.Text
		}
	}
	return ""
}

// Connection is the link to the host: the one view of it, for the
// dashboard's header, its notices and status --json alike.
type Connection struct {
	State       LinkPhase  `json:"state"` // connected | connecting | reconnecting | failed | closed | local
	RTTms       float64    `json:"rtt_ms"`
	LastContact *time.Time `json:"last_contact"`
	Error       string     `json:"error,omitempty"`    // why the link is down: the last dial, handshake or auth error
	Cause       error      `json:"-"`                  // that error itself, when the link keeps it (its kind: a refused host key…)
	Drops       int        `json:"drops"`              // links lost since the dashboard connected
	Attempt     int        `json:"attempt,omitempty"`  // connection attempts so far while down
	NextTry     *time.Time `json:"next_try,omitempty"` // when the next attempt starts, while down
	// Reader is what answered the last poll's reads on the host: "go agent
	// PATH" (no process per file), "fallback" or "fallback (why no agent;
	// the install's progress)" (one exec of remote/host/fallback.sh), or
	// "file by file" (a request each); "" for a local root.
	Reader string `json:"reader,omitempty"`
	// AgentProtocol is the protocol the agent that read spoke (a binary
	// speaking another is left for the fallback): "synthwatch-agent/17".
	AgentProtocol string `json:"agent_protocol,omitempty"`
}

// ReaderText is Reader with the agent's protocol, for people.
func (c Connection) ReaderText() string {
	if c.AgentProtocol == "" {
		return c.Reader
	}
	return c.Reader + " · " + c.AgentProtocol
}

// LinkPhase is where the link to the host stands. Its strings are
// status --json's connection.state (schema 1: never renamed).
type LinkPhase string

// Link phases.
const (
	LinkConnecting   LinkPhase = "connecting"   // the first dial, not answered yet
	LinkConnected    LinkPhase = "connected"    // up
	LinkReconnecting LinkPhase = "reconnecting" // lost, trying again (attempt, next_try)
	LinkFailed       LinkPhase = "failed"       // refused for good (auth, host key): not retried
	LinkClosed       LinkPhase = "closed"       // closed by this end
	LinkLocal        LinkPhase = "local"        // a root on this machine: no link at all
)

// Up says whether the host can be read now: a live link, or no link needed.
func (p LinkPhase) Up() bool { return p == LinkConnected || p == LinkLocal }

// Linked says whether there is a link at all (not a local root).
func (c Connection) Linked() bool { return c.State != LinkLocal }

// Stale says whether the figures may be old: there is a link and it is not up.
func (c Connection) Stale() bool { return c.Linked() && c.State != LinkConnected }

// RTT is the last keepalive round trip; 0 before the first one.
func (c Connection) RTT() time.Duration {
	return time.Duration(math.Round(c.RTTms*1000)) * time.Microsecond
}

// Worker is the inference worker on the host, judged from its process:
// worker.json's pid checked in /proc, or (no worker.json, or a dead pid in
// it) the process found holding the worker log or a raw_responses.jsonl
// open for writing.
type Worker struct {
	// running | stalled | stopped | exited | died | none | unknown
	//   running  a live process, records arriving
	//   stalled  alive, no new records lately (reason says since when, or "waiting for the server")
	//   stopped  ended on a stop request; by_you when synthwatch's kill did it
	//   exited   ended with the job done
	//   died     no process, not done, not stopped by us
	//   none     nothing has run here (no worker.json, no worker log, no process)
	//   unknown  the host could not tell (link down, /proc unreadable)
	// (Before: running | stopped | dead | unknown; dead is now died, a
	// finished stopped is exited, a fresh root's unknown is none.)
	State    WorkerState `json:"state"`
	PID      int         `json:"pid,omitempty"`
	Command  string      `json:"command,omitempty"` // its /proc cmdline, sanitised
	Category string      `json:"category,omitempty"`
	Source   string      `json:"source,omitempty"` // worker.json | proc (found writing the files) | log
	Phase    string      `json:"phase,omitempty"`  // worker.json's own state: waiting_server, stopping, ...
	Reason   string      `json:"reason,omitempty"` // why stalled, stopped, exited or died
	ByYou    bool        `json:"by_you,omitempty"` // stopped by synthwatch's kill (not a crash)
	// Frozen: its process is stopped (SIGSTOP, Ctrl-Z: /proc says T): alive,
	// and writing nothing until it is continued
	Frozen    bool       `json:"frozen,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// Server is the SGLang (or vLLM) server, judged from several witnesses:
// /metrics (and /health when /metrics is missing) answering through the
// SSH link, the server log's lifecycle lines and age, and a worker that
// waits for /health.
type Server struct {
	// starting | ready | busy | unhealthy | hung | down | stopped | crashed | unknown
	//   starting   loading (startup lines, not answering yet)
	//   ready      answering, idle
	//   busy       answering, requests running or queued
	//   unhealthy  answering badly: timeouts, 5xx, a fault in the log
	//   down       refused, with a quiet log or a waiting worker (reason names them)
	//   crashed    the log's last record is a crash
	//   stopped    the log's last record is a graceful stop (SIGTERM, draining)
	//   hung       alive but no progress: NCCL watchdog, vLLM shm broadcast wait, requests at 0 tok/s
	State         ServerState `json:"state"`
	Reason        string      `json:"reason,omitempty"`  // e.g. "/metrics refused, log quiet 2m, worker waiting for /health"
	Metrics       string      `json:"metrics,omitempty"` // how /metrics answered: ok | refused | timeout | no_metrics | http NNN | error
	Health        string      `json:"health,omitempty"`  // how /health answered, when it was asked (no /metrics)
	LogAgeSeconds *float64    `json:"log_age_s"`         // since the server log last grew; null without a log
	WorkerWaiting bool        `json:"worker_waiting,omitempty"`
	GenThroughput float64     `json:"gen_throughput_tok_s"`
	// GenThroughputNote says when GenThroughput is not a measured rate:
	// "needs two samples" (0: a first /metrics sample of a server without a
	// throughput gauge) or how one sample's estimate was made.
	GenThroughputNote string   `json:"gen_throughput_note,omitempty"`
	RunningReqs       int      `json:"running_reqs"`
	QueueReqs         int      `json:"queue_reqs"`
	TokenUsage        float64  `json:"token_usage"`
	CacheHitRate      *float64 `json:"cache_hit_rate"`
	Source            string   `json:"source"` // metrics | log | ""
	// FiguresAgeSeconds: the log's figures are this old (from the newest
	// line of the log and the time since it last changed); FiguresStale:
	// older than a few of the line's own intervals, so not live.
	FiguresAgeSeconds *float64 `json:"figures_age_s,omitempty"`
	FiguresStale      bool     `json:"figures_stale,omitempty"`
	// LastBatch is what the log's last periodic line said, when that line
	// is stale: the current figures are then zero (an idle server runs
	// nothing), and these are shown with their time and age.
	LastBatch   *LastBatch `json:"last_batch,omitempty"`
	Dialect     string     `json:"dialect,omitempty"`
	LastCrash   string     `json:"last_crash,omitempty"`
	LastCrashAt *time.Time `json:"last_crash_at,omitempty"`
	Retractions int        `json:"retractions"`
	Throughput  []float64  `json:"-"` // recent gen throughput for a sparkline; NaN = no sample

	// URL is the server probed (as seen from the host) and URLFrom why that
	// one: "flag --server-url", "env SYNTHWATCH_SERVER_URL", "config.toml",
	// "pipeline.toml server", "pipeline.toml servers" or "default".
	URL     string `json:"url,omitempty"`
	URLFrom string `json:"url_from,omitempty"`
	// With several servers or a router (servers[]): which one this is.
	Name            string `json:"name,omitempty"`             // host:port
	Role            string `json:"role,omitempty"`             // server | router | replica | total
	Via             string `json:"via,omitempty"`              // a replica: its router's URL
	RouterHealthy   *bool  `json:"router_healthy,omitempty"`   // a replica: the router's health checks (its worker list, else its metrics)
	RouterLoad      *int   `json:"router_load,omitempty"`      // a replica: requests the router has in flight on it
	Replicas        int    `json:"replicas,omitempty"`         // a router: workers it lists
	HealthyReplicas int    `json:"replicas_healthy,omitempty"` // a router: of those, healthy by its checks

	// The figures the server TUIs show, on the host's server object
	// (pipeline/servers/latency.go, replicas.go): latency percentiles over the window,
	// speculative acceptance, the KV cache dtype, one row per replica
	// (DP rank, engine, server, engine behind the gateway) when there are
	// several, and the replica that lags them.
	Latency      *Latency     `json:"latency,omitempty"`
	Spec         *SpecDecode  `json:"spec_decode,omitempty"`
	KVCacheDType string       `json:"kv_cache_dtype,omitempty"`
	Rows         []ReplicaRow `json:"replica_rows,omitempty"`
	Imbalance    *Imbalance   `json:"imbalance,omitempty"`
}

// LastBatch is an idle (or silent) server's last periodic log line: when
// it was written (the host's clock) and what it said.
type LastBatch struct {
	At            *time.Time `json:"at,omitempty"`
	AgeSeconds    float64    `json:"age_s"`
	GenThroughput float64    `json:"gen_throughput_tok_s"`
	RunningReqs   int        `json:"running_reqs"`
	QueueReqs     int        `json:"queue_reqs"`
	TokenUsage    float64    `json:"token_usage"`
}

// Category is one dataset category.
type Category struct {
	Name             string  `json:"name"`
	Class            string  `json:"class"`
	Done             int64   `json:"done"`                  // unique records when worker.json measured the extra lines, else lines
	Lines            int64   `json:"lines"`                 // physical lines in raw_responses.jsonl (wc -l)
	CountError       string  `json:"count_error,omitempty"` // why the last count failed: done and lines are the last good figures
	Target           int64   `json:"target"`
	TargetSource     string  `json:"target_source,omitempty"` // worker.json | log | prompts
	Errors           int64   `json:"errors"`
	CompletionTokens *int64  `json:"completion_tokens"`
	TokensUnknown    int64   `json:"tokens_unknown_records,omitempty"` // records with completion_tokens null, missing or not a count: not in completion_tokens
	TokensFrom       string  `json:"tokens_from,omitempty"`            // records (added up from the file) | worker.json
	TokenBudget      int64   `json:"token_budget,omitempty"`
	Progress         float64 `json:"progress"`            // 0–1, by the cap that comes first
	CappedBy         string  `json:"capped_by,omitempty"` // records | tokens: the cap that comes first
	// TokensSumming: no figure yet, its records' tokens being summed on
	// the host, this far (nil: none under way)
	TokensSumming *Summing `json:"tokens_summing,omitempty"`
	// OverCap: the caps it is past (parse.OverCaps), each with its excess
	OverCap []parse.OverCap `json:"over_cap,omitempty"`
	// Outcomes: its records by how they ended (finish reasons, empty
	// answers), when every record was tallied (parse.Outcomes)
	Outcomes *parse.Outcomes `json:"outcomes,omitempty"`
	// Spend: its wasted-token ledger and energy, from the runs' tallies
	// in runs.jsonl (parse.Spend); absent when no run left one
	Spend *parse.Spend `json:"spend,omitempty"`
	// Gate: its training-readiness gate (parse.JudgeGate: PASS, failures
	// by reason, below the floor), when every record was tallied
	Gate       *parse.GateVerdict `json:"gate,omitempty"`
	State      CategoryState      `json:"state"`
	Reason     string             `json:"reason,omitempty"` // why it is stalled, stopped or died, in the words every view shows
	RatePerMin float64            `json:"rate_per_min"`
	TokPerSec  *float64           `json:"tok_per_s"`
	ETASeconds *float64           `json:"eta_s"`
	LastGrowth *time.Time         `json:"last_growth"`
	Warnings   []string           `json:"warnings,omitempty"`
	// Window is how many requests the live worker keeps in flight for it,
	// and WindowReason why that last changed (worker.json; "fixed" when
	// --concurrency or the class set it)
	Window       int    `json:"window,omitempty"`
	WindowReason string `json:"window_reason,omitempty"`
	// Yielded is how many of its requests a shared gateway preempted for
	// other traffic and the worker sent again (worker.json): not failures
	Yielded int `json:"yielded,omitempty"`
	// Configs is its records by server configuration (runs.jsonl and each
	// record's run; "unknown config" for records no run accounts for), and
	// Runs its run history (records null while the tally does not cover the file)
	Configs []ConfigCount `json:"configs,omitempty"`
	// Checks are the sources (log, worker.json) that disagree with the file
	// beyond what a poll explains, each with why it lags
	Checks []SourceCheck `json:"cross_checks,omitempty"`
	Runs   []RunInfo     `json:"runs,omitempty"`
	Rates  []float64     `json:"-"` // recent rate history for sparklines; NaN = no sample
}

// Event is one line of the timeline.
type Event struct {
	Time     time.Time `json:"time"`
	Kind     string    `json:"kind"`
	Category string    `json:"category,omitempty"`
	Text     string    `json:"text"`
	// category_done: the class and the rate it ran at, so a later
	// session's pipeline ETA knows the class's pace without measuring it
	Class      string  `json:"class,omitempty"`
	RatePerMin float64 `json:"rate_per_min,omitempty"`
	// Key names an event that reading the same log again would make again
	// (its kind, log time and message): the Timeline keeps one of each.
	Key string `json:"key,omitempty"`
}
