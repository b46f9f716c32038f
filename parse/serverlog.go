package parse

import "strings"

// MaxAttached caps the continuation lines kept on one event, so that a
// runaway traceback cannot grow memory without bound.
const MaxAttached = 200

// ServerLog parses a server log line by line and attaches unprefixed
// continuation lines (traceback frames, exception text) to the error record
// they follow. It also remembers the dialect, so that vLLM's "Application
// startup complete." counts as ready while SGLang waits for its own line.
type ServerLog struct {
	pending    *ServerEvent
	Dialect    Dialect
	pendingBuf ServerEvent
}

// Feed parses one line and calls emit for each record completed by it. An
// error record is held until a line that is not its continuation arrives,
// or until Flush.
func (r *ServerLog) Feed(line string, emit func(ServerEvent)) {
	if r.pending != nil && isContinuation(line) {
		if strings.TrimSpace(line) == "" {
			return // blank lines inside a traceback carry nothing
		}
		p := r.pending
		l := SanitizeString(line)
		if isOOM(l) {
			p.OOM = true
		}
		if len(p.Lines) < MaxAttached {
			p.Lines = append(p.Lines, l)
		} else {
			p.LinesDropped++
		}
		return
	}
	r.Flush(emit)
	ev := ParseServerLine(line)
	if ev.Dialect != DialectUnknown {
		r.Dialect = ev.Dialect
	}
	if r.Dialect == DialectVLLM && ev.Kind == SStartup && ev.Startup.Stage == "app_started" {
		ev.Kind = SReady
	}
	switch ev.Kind {
	case SCrash, SError, SOOM, SWatchdog, SWarmupFail:
		r.pendingBuf = ev
		r.pending = &r.pendingBuf
	default:
		emit(ev)
	}
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

// isContinuation tells a traceback body line from a new record: it has no
// prefix of its own and is not a tqdm bar.
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
	if strings.IndexByte(line, 0x1b) >= 0 {
		if _, _, ok := parseVLLMPrefix(SanitizeString(line)); ok {
			return false
		}
	}
	_, isBar := parseBar(line)
	return !isBar
}
