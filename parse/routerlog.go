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
	RCircuitOpen            // "Circuit breaker state transition: closed -> open": the gateway stops routing to a worker
	RRetry                  // a request retried on another worker ("PD retry attempt …", "Retry backoff")
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
	// Fields are the structured fields that name a worker (worker_url,
	// worker, url) and its error, from the text form's " key=value" or the
	// --json-log object.
	Fields map[string]string
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
	l.Msg, l.Fields = splitTextFields(rest)
	classifyRouter(&l)
	return l, true
}

// splitTextFields separates tracing's fmt fields ("Health probe failed
// worker_url=http://a:1 error=…") from the message: the fields follow it,
// each " key=value" (a Display value unquoted, a Debug string quoted).
// Only the fields the gateway names a worker by are looked for.
func splitTextFields(rest string) (msg string, fields map[string]string) {
	cut := len(rest)
	for _, k := range workerFieldKeys {
		i := strings.Index(rest, " "+k+"=")
		if i < 0 {
			continue
		}
		if fields == nil {
			fields = map[string]string{}
		}
		v := rest[i+len(k)+2:]
		if j := strings.IndexByte(v, ' '); j >= 0 {
			v = v[:j]
		}
		fields[k] = strings.Trim(v, `"`)
		cut = min(cut, i)
	}
	if e := strings.Index(rest, " error="); e >= 0 && fields != nil {
		fields["error"] = strings.Trim(rest[e+len(" error="):], `"`)
		cut = min(cut, e)
	}
	return rest[:cut], fields
}

// workerFieldKeys are the structured fields smg names a worker by
// (model_gateway/src/worker/manager.rs @ f8daa883: worker_url = %worker.url()).
var workerFieldKeys = []string{"worker_url", "worker", "url"}

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
	case strings.HasPrefix(m, "HTTP health check returned non-success status for "):
		w, d := cutLastColon(strings.TrimPrefix(m, "HTTP health check returned non-success status for "))
		l.Kind, l.Worker, l.Detail = RWorkerDown, baseURL(w), d
	case strings.HasPrefix(m, "gRPC health RPC error for "):
		w, d := cutLastColon(strings.TrimPrefix(m, "gRPC health RPC error for "))
		l.Kind, l.Worker, l.Detail = RWorkerDown, baseURL(w), d
	case m == "Health probe failed" || strings.HasPrefix(m, "Health check failed for worker "):
		l.Kind, l.Worker, l.Detail = RWorkerDown, baseURL(l.field()), l.Fields["error"]
		if l.Worker == "" && strings.HasPrefix(m, "Health check failed for worker ") {
			w, d := cutLastColon(strings.TrimPrefix(m, "Health check failed for worker "))
			l.Worker, l.Detail = baseURL(w), d
		}
	case strings.HasPrefix(m, "Circuit breaker state transition: ") && strings.HasSuffix(m, "-> open"):
		l.Kind, l.Worker, l.Detail = RCircuitOpen, baseURL(l.field()), strings.TrimPrefix(m, "Circuit breaker state transition: ")
	case strings.HasPrefix(m, "PD retry attempt "), m == "Retry backoff", strings.HasPrefix(m, "Retry backoff "):
		// the text form keeps retry.rs's fields after the message ("Retry backoff attempt=0 next_attempt=1 delay_ms=50")
		l.Kind, l.Worker = RRetry, baseURL(l.field())
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
		Timestamp string         `json:"timestamp"`
		Level     string         `json:"level"`
		Message   string         `json:"message"`
		Target    string         `json:"target"`
		Fields    map[string]any `json:"fields"`
		Span      map[string]any `json:"span"`
	}
	if json.Unmarshal([]byte(line), &rec) != nil || rec.Level == "" {
		return l, false
	}
	var flat map[string]any // flatten_event(true): the fields stand beside "message"
	_ = json.Unmarshal([]byte(line), &flat)
	msg := rec.Message
	if m, ok := rec.Fields["message"].(string); ok && msg == "" {
		msg = m
	}
	l = RouterLine{Level: strings.ToUpper(rec.Level), Target: rec.Target, Msg: msg}
	for _, src := range []map[string]any{flat, rec.Fields, rec.Span} {
		for _, k := range append([]string{"error"}, workerFieldKeys...) {
			if v, ok := src[k].(string); ok && v != "" {
				if l.Fields == nil {
					l.Fields = map[string]string{}
				}
				if l.Fields[k] == "" {
					l.Fields[k] = v
				}
			}
		}
	}
	for _, layout := range []string{"2006-01-02 15:04:05", time.RFC3339Nano} {
		if t, err := time.Parse(layout, rec.Timestamp); err == nil {
			l.Time = t.UTC()
			break
		}
	}
	classifyRouter(&l)
	return l, true
}

// field is the worker a line's structured fields name.
func (l *RouterLine) field() string {
	for _, k := range workerFieldKeys {
		if v := l.Fields[k]; v != "" {
			return v
		}
	}
	return ""
}

// cutLastColon splits "URL: detail" where URL has colons of its own: at
// the first ": " (a URL holds none).
func cutLastColon(s string) (string, string) {
	a, b, _ := strings.Cut(s, ": ")
	return a, b
}

// baseURL is a worker's URL without the health path the gateway probed
// (its health_endpoint may be any path): scheme://host:port.
func baseURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return scheme + "://" + rest
}
