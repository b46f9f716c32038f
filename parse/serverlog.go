package parse

import "strings"

// MaxAttached caps the continuation lines kept on one event, so that a
// runaway traceback cannot grow memory without bound.
const MaxAttached = 200

// maxPartial caps a line joined from CRI partial ("P") records.
const maxPartial = 1 << 20

// ServerLog parses a server log line by line and attaches unprefixed
// continuation lines (traceback frames, exception text) to the error record
// they follow. It also remembers the dialect, so that vLLM's "Application
// startup complete." counts as ready while SGLang waits for its own line.
// Deployment wrappers are peeled off each line (Unwrap), and Kubernetes CRI
// partial records are joined into the line they belong to.
type ServerLog struct {
	pending    *ServerEvent
	Dialect    Dialect
	pendingBuf ServerEvent
	partial    strings.Builder
	partWrap   Wrap
	// the newest record's dialect and prefix: a vLLM message's next lines share it
	lastDialect Dialect
	lastPrefix  Prefix
}

// Feed parses one line and calls emit for each record completed by it. An
// error record is held until a line that is not its continuation arrives,
// or until Flush.
func (r *ServerLog) Feed(line string, emit func(ServerEvent)) {
	inner, w := unwrapOuter(line)
	if w.Partial {
		if r.partial.Len() == 0 {
			r.partWrap = w
		}
		if r.partial.Len()+len(inner) <= maxPartial {
			r.partial.WriteString(inner)
		}
		return
	}
	if r.partial.Len() > 0 {
		if r.partial.Len()+len(inner) <= maxPartial {
			r.partial.WriteString(inner)
		}
		inner, w = r.partial.String(), r.partWrap
		w.Partial = false
		r.partial.Reset()
	}
	inner = unwrapInner(inner, &w)
	if r.pending != nil && isContinuation(inner) {
		if strings.TrimSpace(inner) == "" {
			return // blank lines inside a traceback carry nothing
		}
		r.attach(SanitizeString(inner))
		return
	}
	ev := parseInner(inner)
	ev.Wrap = w
	if r.pending != nil && vllmContinuation(r.pending, &ev) {
		// vLLM repeats its prefix on every line of a multi-line message
		r.attach(ev.Msg)
		return
	}
	if r.pending == nil && r.lastDialect == DialectVLLM && ev.Dialect == DialectVLLM && tracebackLine(ev.Msg) &&
		vllmContinuation(&ServerEvent{Dialect: r.lastDialect, Prefix: r.lastPrefix}, &ev) {
		// the next line of a message already emitted (a warning logged with
		// its traceback, exc_info=True): its "Traceback …" is not a crash
		return
	}
	r.Flush(emit)
	r.lastDialect, r.lastPrefix = ev.Dialect, ev.Prefix
	if ev.Dialect != DialectUnknown {
		r.Dialect = ev.Dialect
	}
	if r.Dialect == DialectVLLM && ev.Kind == SStartup && ev.Startup.Stage == "app_started" {
		ev.Kind = SReady
	}
	switch ev.Kind {
	case SCrash, SError, SOOM, SWatchdog, SWatchdogSoft, SWarmupFail:
		r.pendingBuf = ev
		r.pending = &r.pendingBuf
	default:
		emit(ev)
	}
}

func (r *ServerLog) attach(l string) {
	p := r.pending
	if isOOM(l) {
		p.OOM = true
	}
	if len(p.Lines) < MaxAttached {
		p.Lines = append(p.Lines, l)
	} else {
		p.LinesDropped++
	}
}

// vllmContinuation tells whether ev, a vLLM line, is the next line of the
// held record: the same process, level and source file:line, and not the
// head of a new record ("EngineCore encountered a fatal error." repeated by
// another engine has its own process tag).
func vllmContinuation(p, ev *ServerEvent) bool {
	if p.Dialect != DialectVLLM || ev.Dialect != DialectVLLM || p.Prefix.Source == "" {
		return false
	}
	return ev.Prefix.Process == p.Prefix.Process && ev.Prefix.Source == p.Prefix.Source &&
		ev.Prefix.Level == p.Prefix.Level && ev.Prefix.Time.Sub(p.Prefix.Time) < 2e9 && ev.Prefix.Time.Sub(p.Prefix.Time) >= 0
}

// Flush emits a held record. Call it when the log has gone quiet, so that a
// crash at the very end of a log is reported.
func (r *ServerLog) Flush(emit func(ServerEvent)) {
	if r.pending != nil {
		ev := *r.pending
		r.pending = nil
		r.pendingBuf = ServerEvent{}
		emit(ev)
	}
}

// isContinuation tells a traceback body line (wrappers removed) from a new
// record: it has no prefix of its own and is not a tqdm bar.
func isContinuation(line string) bool {
	if line == "" {
		return true
	}
	if _, _, ok := parseSGLangPrefix(line); ok {
		return false
	}
	if _, _, ok := parseVLLMPrefix(line); ok {
		return false
	}
	_, isBar := parseBar(line)
	return !isBar
}

// tracebackLine: a line of a Python traceback (its head, a frame, the
// exception), as a multi-line message's next line shows it.
func tracebackLine(m string) bool {
	if strings.HasPrefix(m, "Traceback (most recent call last)") || strings.HasPrefix(m, " ") || strings.HasPrefix(m, "\t") {
		return true
	}
	name, _, ok := strings.Cut(m, ": ")
	return ok && !strings.ContainsAny(name, " ([") && (strings.HasSuffix(name, "Error") || strings.HasSuffix(name, "Exception"))
}
