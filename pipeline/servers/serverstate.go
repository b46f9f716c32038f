package servers

import (
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// quietAfter: a server log that has not grown for this long is quiet.
const quietAfter = 30 * time.Second

// serverRow is one row of the server's state table: when it holds, the
// server is in state, for the reason its words give. A row with no state
// leaves the state to the log (logRows), its words first.
type serverRow struct {
	when  func(f serverFacts) bool
	state snapshot.ServerState
	words func(f serverFacts) string
}

// probeRows come first: the probe stands above the log (a server that
// answers is live whatever the log's last word), then each way it fails.
// Refused plus a quiet log (none, or no growth for quietAfter), or refused
// plus a live worker waiting for /health while the log did not grow since
// the last poll, is down. A refusal with a fresh log and no waiting worker
// is judged by the log: the URL may not be the server's (the words say so).
var probeRows = []serverRow{
	{func(f serverFacts) bool { return f.answering() && f.hang != "" }, snapshot.ServerHung, func(f serverFacts) string { return "hang: " + f.hang }},
	{func(f serverFacts) bool { return f.answering() && f.fault != "" }, snapshot.ServerUnhealthy, func(f serverFacts) string { return "fault: " + f.fault }},
	{func(f serverFacts) bool { return f.answering() && f.load > 0 }, snapshot.ServerBusy, say("")},
	{serverFacts.answering, snapshot.ServerReady, say("")},

	{func(f serverFacts) bool { return f.refusedWith("crash") && !f.logGrew }, snapshot.ServerCrashed, say("/metrics refused; last log record is a crash")},
	{func(f serverFacts) bool { return f.refusedWith("stop") && !f.logGrew }, snapshot.ServerStopped, func(f serverFacts) string { return "/metrics refused; stopped on request: " + f.stop }},
	{func(f serverFacts) bool { return f.refusedWith("startup") && (f.logGrew || f.logAge < quietAfter) }, snapshot.ServerStarting, say("/metrics refused while the log shows the server loading")},
	{func(f serverFacts) bool { return f.metrics == "refused" && (f.logQuiet() || !f.logGrew && f.waiting) }, snapshot.ServerDown, refusedWords},
	{func(f serverFacts) bool { return f.metrics == "refused" }, "", say("/metrics refused; state from the log (is the server URL right?)")},

	{func(f serverFacts) bool { return f.metrics == "timeout" && f.phase == "crash" }, snapshot.ServerCrashed, say("/metrics timed out; last log record is a crash")},
	{func(f serverFacts) bool { return f.metrics == "timeout" && f.hang != "" }, snapshot.ServerHung, func(f serverFacts) string { return "/metrics timed out; hang: " + f.hang }},
	{func(f serverFacts) bool { return f.metrics == "timeout" }, snapshot.ServerUnhealthy, say("/metrics timed out (3s)")},

	{func(f serverFacts) bool { return f.httpStatus() && f.phase == "startup" }, snapshot.ServerStarting, func(f serverFacts) string { return f.statusWords() + " while the log shows the server loading" }},
	{func(f serverFacts) bool { return f.httpStatus() && f.phase == "crash" }, snapshot.ServerCrashed, func(f serverFacts) string { return f.statusWords() + "; last log record is a crash" }},
	{serverFacts.httpStatus, snapshot.ServerUnhealthy, serverFacts.statusWords},

	{func(f serverFacts) bool { return f.health == "refused" }, snapshot.ServerDown, say("/health refused")},
	{func(f serverFacts) bool { return f.health == "timeout" && f.hang != "" }, snapshot.ServerHung, func(f serverFacts) string { return "/health timed out (3s); hang: " + f.hang }},
	{func(f serverFacts) bool { return f.health == "timeout" }, snapshot.ServerUnhealthy, say("/health timed out (3s)")},

	{always, "", say("")}, // not asked, or no answer that says anything
}

// logRows judge the server by its log, in the ladder's order
// (docs/SERVER-STATES.md, Endings): the run's ending, a new run, then a
// serving run's hang, fault and load.
var logRows = []serverRow{
	{phaseIs("crash"), snapshot.ServerCrashed, say("last log record is a crash")},
	{phaseIs("stop"), snapshot.ServerStopped, func(f serverFacts) string { return "stopped on request: " + f.stop }},
	{phaseIs("startup"), snapshot.ServerStarting, say("the log shows the server loading")},
	{func(f serverFacts) bool { return f.hang != "" }, snapshot.ServerHung, func(f serverFacts) string { return "hang: " + f.hang }}, // phase "": a first read that begins after the last batch line
	{func(f serverFacts) bool { return f.phase == "ready" && f.fault != "" }, snapshot.ServerUnhealthy, func(f serverFacts) string { return "fault: " + f.fault }},
	{func(f serverFacts) bool { return f.phase == "ready" && f.load > 0 }, snapshot.ServerBusy, say("")},
	{phaseIs("ready"), snapshot.ServerReady, say("")},
	{func(f serverFacts) bool { return f.logSeen }, snapshot.ServerStarting, say("the log shows no ready line yet")},
	{always, snapshot.ServerUnknown, say("")},
}

// serverStateFor reads the state table: the first probe row that holds,
// or, for a row that leaves it to the log, the first log row that holds.
func serverStateFor(f serverFacts) (state snapshot.ServerState, reason string) {
	r := firstRow(probeRows, f)
	if r.state != "" {
		return r.state, r.words(f)
	}
	why := r.words(f)
	r = firstRow(logRows, f)
	if words := r.words(f); words != "" {
		return r.state, join(why, words)
	}
	return r.state, why
}

func firstRow(rows []serverRow, f serverFacts) serverRow {
	for _, r := range rows {
		if r.when(f) {
			return r
		}
	}
	panic("a state table without its last row")
}

func (f serverFacts) answering() bool { return f.metrics == "ok" || f.health == "ok" }

func (f serverFacts) refusedWith(phase string) bool {
	return f.metrics == "refused" && f.phase == phase
}

// logQuiet: no server log, or none that grew for quietAfter.
func (f serverFacts) logQuiet() bool { return !f.logSeen || !f.logGrew && f.logAge >= quietAfter }

// httpStatus: /metrics, or /health when /metrics is missing, answered an
// HTTP error.
func (f serverFacts) httpStatus() bool {
	return strings.HasPrefix(f.metrics, "http ") || strings.HasPrefix(f.health, "http ")
}

// statusWords name the status that answered: "/metrics 500", "/health 503".
func (f serverFacts) statusWords() string {
	if f.metrics == "no_metrics" {
		return "/health " + strings.TrimPrefix(f.health, "http ")
	}
	return "/metrics " + strings.TrimPrefix(f.metrics, "http ")
}

// refusedWords: "/metrics refused, log quiet 2m, worker waiting for /health".
func refusedWords(f serverFacts) string {
	r := "/metrics refused"
	switch {
	case !f.logSeen:
		r += ", no server log"
	case f.logAge > 0:
		r += ", log quiet " + snapshot.FormatDuration(f.logAge)
	}
	if f.waiting {
		r += ", worker waiting for /health"
	}
	return r
}

func always(serverFacts) bool { return true }

func phaseIs(phase string) func(serverFacts) bool {
	return func(f serverFacts) bool { return f.phase == phase }
}

func say(words string) func(serverFacts) string {
	return func(serverFacts) string { return words }
}
