package parse

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The router logs through Rust's tracing-subscriber fmt layer, not SGLang's
// logging: time (UTC, "%Y-%m-%d %H:%M:%S"), the level right-aligned to five
// columns, the target, file:line, then the message; coloured on stdout
// (sgl-router/src/logging.rs @ 23b8438b: with_ansi(colorize), with_file,
// with_line_number, ChronoUtc). For example:
//
//	2026-02-26 13:55:38  INFO smg::server: /home/runner/work/sglang/sglang/src/server.rs:985: Router ready | workers: []
//
// The messages read here are from sgl-router/src/server.rs @ 00eb5eb7
// ("Starting router on {}:{} | mode: …", "Workers initialized: {} total, {}
// healthy", "Router ready | workers: {:?}", "Starting server on {}") and
// sgl-router/src/core/worker.rs @ 03190661 ("Worker {} health check failed:
// {}" at warn, "Worker {} is now healthy" at info).
//
// The router is now the Shepherd Model Gateway (smg-project/smg): the same
// text format (model_gateway/src/observability/logging.rs @ 9403b030,
// TIME_FORMAT "%Y-%m-%d %H:%M:%S", ChronoUtc), worker health as
// "HTTP health check failed for {health_url}: {err:?}" (warn) and
// "gRPC health timed out for {url}" (model_gateway/src/worker/worker.rs @
// f8daa883, per shared/reference/review/server-semantics.md §1.4), and
// with --json-log one JSON object a line (.json().flatten_event(true)):
// {"timestamp":"…","level":"WARN","message":"…","target":"smg::…","filename":"…","line_number":N}.

// RouterKind is what a router log line says.
type RouterKind int

// Router log line kinds.
const (
	ROther       RouterKind = iota
	RStarting               // "Starting router on …": loading
	RReady                  // "Router ready | workers: …" or "Starting server on …": it listens
	RWorkersInit            // "Workers initialized: N total, M healthy"
	RWorkerDown             // "Worker URL health check failed: …"
	RWorkerUp               // "Worker URL is now healthy"
	RError                  // any other ERROR line
)

// RouterLine is one router log line.
type RouterLine struct {
	Kind    RouterKind
	Time    time.Time // UTC
	Level   string    // TRACE DEBUG INFO WARN ERROR
	Target  string    // e.g. smg::server, sglang_router_rs::core::worker
	Msg     string
	Worker  string // RWorkerDown, RWorkerUp: the worker's URL
	Detail  string // RWorkerDown: the error
	Total   int    // RWorkersInit
	Healthy int    // RWorkersInit
}

// ParseRouterLine reads one router log line; ok is false for a line that
// is not in the router's format (a Python traceback of launch_router, say).
func ParseRouterLine(line string) (l RouterLine, ok bool) {
	line, _ = Unwrap(line) // colour codes
	if strings.HasPrefix(line, "{") {
		return parseRouterJSON(line)
	}
	if len(line) < 21 || line[4] != '-' || line[10] != ' ' {
		return l, false
	}
	t, err := time.Parse("2006-01-02 15:04:05", line[:19])
	if err != nil {
		return l, false
	}
	rest := strings.TrimLeft(line[19:], " ")
	lvl, rest, found := strings.Cut(rest, " ")
	switch lvl {
	case "TRACE", "DEBUG", "INFO", "WARN", "ERROR":
	default:
		return l, false
	}
	if !found {
		return l, false
	}
	l = RouterLine{Time: t.UTC(), Level: lvl}
	target, rest, found := strings.Cut(rest, ": ")
	if !found || strings.Contains(target, " ") {
		return l, false
	}
	l.Target = target
	// file:line: (present with with_file + with_line_number)
	if i := strings.Index(rest, ": "); i > 0 && strings.Contains(rest[:i], ".rs:") && !strings.Contains(rest[:i], " ") {
		rest = rest[i+2:]
	}
	l.Msg = rest
	classifyRouter(&l)
	return l, true
}

func classifyRouter(l *RouterLine) {
	m := l.Msg
	switch {
	case strings.HasPrefix(m, "Starting router on "):
		l.Kind = RStarting
	case strings.HasPrefix(m, "Router ready | workers:"), strings.HasPrefix(m, "Starting server on "):
		l.Kind = RReady
	case strings.HasPrefix(m, "Workers initialized: "):
		f := strings.Fields(strings.TrimPrefix(m, "Workers initialized: ")) // N total, M healthy
		if len(f) >= 3 {
			l.Total, _ = strconv.Atoi(f[0])
			l.Healthy, _ = strconv.Atoi(f[2])
			l.Kind = RWorkersInit
		}
	case strings.HasPrefix(m, "Worker ") && strings.Contains(m, " health check failed: "):
		w, d, _ := strings.Cut(strings.TrimPrefix(m, "Worker "), " health check failed: ")
		l.Kind, l.Worker, l.Detail = RWorkerDown, w, d
	case strings.HasPrefix(m, "HTTP health check failed for "):
		w, d, _ := strings.Cut(strings.TrimPrefix(m, "HTTP health check failed for "), ": ")
		l.Kind, l.Worker, l.Detail = RWorkerDown, strings.TrimSuffix(w, "/health"), d
	case strings.HasPrefix(m, "gRPC health timed out for "):
		l.Kind, l.Worker, l.Detail = RWorkerDown, strings.TrimPrefix(m, "gRPC health timed out for "), "timed out"
	case strings.HasPrefix(m, "Worker ") && strings.HasSuffix(m, " is now healthy"):
		l.Kind, l.Worker = RWorkerUp, strings.TrimSuffix(strings.TrimPrefix(m, "Worker "), " is now healthy")
	case l.Level == "ERROR":
		l.Kind = RError
	}
}

// parseRouterJSON reads a --json-log line; the message may also sit under
// "fields" (tracing's JSON layer without flatten_event).
func parseRouterJSON(line string) (l RouterLine, ok bool) {
	var rec struct {
		Timestamp string `json:"timestamp"`
		Level     string `json:"level"`
		Message   string `json:"message"`
		Target    string `json:"target"`
		Fields    struct {
			Message string `json:"message"`
		} `json:"fields"`
	}
	if json.Unmarshal([]byte(line), &rec) != nil || rec.Level == "" {
		return l, false
	}
	msg := rec.Message
	if msg == "" {
		msg = rec.Fields.Message
	}
	l = RouterLine{Level: strings.ToUpper(rec.Level), Target: rec.Target, Msg: msg}
	for _, layout := range []string{"2006-01-02 15:04:05", time.RFC3339Nano} {
		if t, err := time.Parse(layout, rec.Timestamp); err == nil {
			l.Time = t.UTC()
			break
		}
	}
	classifyRouter(&l)
	return l, true
}
