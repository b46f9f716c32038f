package parse

import (
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Wrap is what a deployment put around a server log line before it reached
// the file: a container runtime's timestamp, a compose service prefix, a
// journal or ts stamp, a Ray actor tag, colour codes. Unwrap peels it off so
// that the line parses as the server printed it; the server's own (inner)
// timestamp stays the line's time.
type Wrap struct {
	// Time is an absolute timestamp a wrapper printed (docker logs -t,
	// Kubernetes CRI, docker's json-file "time", compose -t, journalctl -o
	// short-iso), in UTC; zero when there was none or it had no year or zone
	// (ts, classic journald).
	Time time.Time
	// Runtime names the outermost wrapper: "docker", "cri", "docker-json",
	// "compose", "supervisor", "journald", "ts", "stamp" or "".
	Runtime string
	Stream  string // CRI, json-file and supervisor: "stdout" or "stderr"
	// Service is the compose service, the supervisord program or the
	// journal's identifier that printed the line.
	Service string
	// Partial is the CRI "P" flag: the runtime split a long line and the
	// rest follows in the next record (ServerLog joins them).
	Partial bool
	// Actor is the outermost Ray-style process tag that is not one of vLLM's
	// own ("SGLangEngine pid=123", "WorkerDict pid=616, ip=10.0.0.1", "pid=77").
	Actor string
	ANSI  bool // colour or other escape codes were removed

	cri bool // unwrapOuter stopped at a CRI record's prefix
}

// maxTags bounds the process tags peeled from one line.
const maxTags = 8

// maxLayers bounds the wrappers peeled from one line (compose around
// docker -t around ts, say).
const maxLayers = 6

// Unwrap removes the deployment wrappers from a log line, in any nesting:
// ANSI escape codes anywhere; a docker json-file record
// ({"log":"…","stream":"…","time":"…"}); a docker `-t` timestamp
// ("2026-03-01T02:03:04.123456789Z "); a Kubernetes CRI prefix
// ("2026-03-01T02:03:04.123456789Z stderr F "); `journalctl -o short-iso`
// ("2026-03-01T02:03:04+0000 host ident[pid]: ") and the classic journal
// form ("Mar 01 02:03:04 host ident[pid]: "); `docker compose logs`' service
// column ("SERVICE-1  | ", with or without -t after it); supervisor_stdout's
// "program | stdout | "; moreutils ts ("Mar 01 02:03:04 ", -s/-i
// "00:00:05 ") and a collector's "2026-03-01 02:03:04.123 | "; and Ray
// actor tags ("(SGLangEngine pid=N) ", "(pid=N, ip=…) ", with Ray's
// " [repeated 3x across cluster]" tail). vLLM's own process tags
// ("(APIServer pid=1) (EngineCore_DP0 pid=322) ") are kept, for the vLLM
// prefix parser. A line without wrappers is returned as is.
func Unwrap(line string) (inner string, w Wrap) {
	line, w = unwrapOuter(line)
	return unwrapInner(line, &w), w
}

// unwrapOuter peels the wrappers down to and including a CRI record's
// prefix: what a CRI record holds may be half a line (the "P" flag), to be
// joined to the next record before the layers inside it are read.
func unwrapOuter(line string) (string, Wrap) {
	var w Wrap
	line = stripEscapes(line, &w)
	for n := 0; n < maxLayers; n++ {
		l, ok := peelLayer(line, &w)
		if !ok {
			break
		}
		line = l
		if w.cri {
			break
		}
	}
	return line, w
}

// unwrapInner peels what stands inside a (joined) CRI record, or goes on
// after unwrapOuter found none.
func unwrapInner(line string, w *Wrap) string {
	for n := 0; w.cri && n < maxLayers; n++ {
		l, ok := peelLayer(line, w)
		if !ok {
			break
		}
		line = l
	}
	w.cri = false
	return peelActors(line, w)
}

func stripEscapes(line string, w *Wrap) string {
	if strings.IndexByte(line, 0x1b) >= 0 || strings.IndexByte(line, 0x9b) >= 0 || strings.HasSuffix(line, "\r") {
		if strings.IndexByte(line, 0x1b) >= 0 {
			w.ANSI = true
		}
		line = SanitizeString(line)
	}
	return line
}

// peelLayer removes the outermost wrapper it knows from line.
func peelLayer(line string, w *Wrap) (string, bool) {
	switch {
	case line == "" || line[0] == '[' || line[0] == '(' || line[0] == ' ':
		return line, false // a server's own prefix, a process tag or a traceback line: no wrapper starts so
	case strings.HasPrefix(line, `{"log":`):
		return unwrapDockerJSON(line, w)
	case len(line) >= 20 && line[4] == '-' && line[10] == 'T' && isDigit(line[0]):
		return unwrapRuntimeTime(line, w)
	case len(line) >= 22 && line[4] == '-' && line[10] == ' ' && isDigit(line[0]):
		return unwrapStamp(line, w)
	case isDigit(line[0]) && len(line) > 9 && line[2] == ':':
		return unwrapElapsed(line, w)
	}
	if l, ok := unwrapMonthDay(line, w); ok {
		return l, true
	}
	return unwrapService(line, w)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isAlnum: an ASCII letter or digit.
func isAlnum(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// setRuntime names the outermost wrapper only.
func (w *Wrap) setRuntime(name string) {
	if w.Runtime == "" {
		w.Runtime = name
	}
}

func (w *Wrap) setTime(t time.Time) {
	if w.Time.IsZero() {
		w.Time = t.UTC()
	}
}

// zonedLayouts are the absolute stamps a wrapper prints: RFC 3339 (docker,
// CRI, compose -t) and journald's short-iso(-precise) "+0000" zone.
var zonedLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05-0700", "2006-01-02T15:04:05.999999999-0700"}

// unwrapRuntimeTime reads an absolute timestamp and a space, then, for CRI,
// "stdout|stderr F|P ", for the journal "host ident[pid]: ".
func unwrapRuntimeTime(line string, w *Wrap) (string, bool) {
	sp := strings.IndexByte(line, ' ')
	if sp < 19 || sp > 40 {
		return line, false
	}
	var t time.Time
	err := error(nil)
	for _, layout := range zonedLayouts {
		if t, err = time.Parse(layout, line[:sp]); err == nil {
			break
		}
	}
	if err != nil {
		return line, false
	}
	rest := line[sp+1:]
	w.setTime(t)
	for _, stream := range []string{"stdout ", "stderr "} {
		if strings.HasPrefix(rest, stream) && len(rest) >= len(stream)+1 {
			flag := rest[len(stream)]
			after := rest[len(stream)+1:]
			if (flag == 'F' || flag == 'P') && (after == "" || after[0] == ' ') {
				w.setRuntime("cri")
				w.Stream, w.Partial, w.cri = stream[:6], flag == 'P', true
				return strings.TrimPrefix(after, " "), true
			}
		}
	}
	if ident, after, ok := cutJournal(rest); ok {
		w.setRuntime("journald")
		w.Service = ident
		return after, true
	}
	w.setRuntime("docker")
	return rest, true
}

// cutJournal reads the journal's "host ident[pid]: " (journalctl's short
// and short-iso formats) at the start of s.
func cutJournal(s string) (ident, rest string, ok bool) {
	sp := strings.IndexByte(s, ' ')
	if sp <= 0 || sp > 255 {
		return "", s, false
	}
	r := s[sp+1:]
	colon := strings.Index(r, ": ")
	if colon < 0 && strings.HasSuffix(r, ":") {
		colon = len(r) - 1
	}
	if colon <= 3 || colon > 128 || strings.IndexByte(r[:colon], ' ') >= 0 || r[colon-1] != ']' {
		return "", s, false
	}
	id := r[:colon-1]
	lb := strings.LastIndexByte(id, '[')
	if lb <= 0 {
		return "", s, false
	}
	if _, okp := digits(id[lb+1:]); !okp {
		return "", s, false
	}
	rest = ""
	if colon+2 <= len(r) {
		rest = r[colon+2:]
	}
	return id[:lb], rest, true
}

// unwrapStamp reads a collector's "2026-03-01 02:03:04(.123) | ": the pipe
// tells it from a line that starts with its own date (the router's).
func unwrapStamp(line string, w *Wrap) (string, bool) {
	i := strings.Index(line, " | ")
	if i < 19 || i > 32 {
		return line, false
	}
	if _, err := time.Parse("2006-01-02 15:04:05", line[:19]); err != nil || !fraction(line[19:i]) {
		return line, false
	}
	w.setRuntime("stamp")
	return line[i+3:], true
}

// fraction accepts "" or "." / "," and digits.
func fraction(s string) bool {
	if s == "" {
		return true
	}
	if s[0] != '.' && s[0] != ',' {
		return false
	}
	_, ok := digits(s[1:])
	return ok
}

// unwrapElapsed reads ts -s / -i: "00:00:05 " or "00:00:05.123456 ".
func unwrapElapsed(line string, w *Wrap) (string, bool) {
	if _, _, _, ok := clock(line); !ok {
		return line, false
	}
	sp := strings.IndexByte(line, ' ')
	if sp < 8 || !fraction(line[8:sp]) {
		return line, false
	}
	w.setRuntime("ts")
	return line[sp+1:], true
}

// unwrapMonthDay reads "Mar 01 02:03:04(.123) ": moreutils ts's default
// ("%b %d %H:%M:%S"), or, followed by "host ident[pid]: ", the classic
// journal (or syslog) line. The month is any word of letters (journalctl
// prints it in the host's locale).
func unwrapMonthDay(line string, w *Wrap) (string, bool) {
	mon, rest, ok := strings.Cut(line, " ")
	if !ok || mon == "" || len(mon) > 16 || !letters(mon) {
		return line, false
	}
	rest = strings.TrimPrefix(rest, " ") // syslog pads the day: "Mar  1"
	day, rest, ok := strings.Cut(rest, " ")
	if !ok || len(day) == 0 || len(day) > 2 {
		return line, false
	}
	if _, okd := digits(day); !okd {
		return line, false
	}
	if _, _, _, okc := clock(rest); !okc {
		return line, false
	}
	sp := strings.IndexByte(rest, ' ')
	if sp < 8 || !fraction(rest[8:sp]) {
		return line, false
	}
	rest = rest[sp+1:]
	if ident, after, okj := cutJournal(rest); okj {
		w.setRuntime("journald")
		w.Service = ident
		return after, true
	}
	w.setRuntime("ts")
	return rest, true
}

func letters(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsLetter(r) && r != '.' {
			return false
		}
	}
	return true
}

// unwrapService reads `docker compose logs`' column, the service name
// padded with spaces then "| " (compose's presenter: fmt "%-Ns | "), and
// supervisor_stdout's "program | stdout | ".
func unwrapService(line string, w *Wrap) (string, bool) {
	i := strings.Index(line[:min(len(line), 131)], " | ")
	if i <= 0 || i > 128 {
		return line, false
	}
	name := strings.TrimRight(line[:i], " ")
	if !serviceName(name) {
		return line, false
	}
	rest := line[i+3:]
	w.Service = name
	for _, ch := range []string{"stdout", "stderr"} {
		if strings.HasPrefix(rest, ch+" | ") {
			w.setRuntime("supervisor")
			w.Stream = ch
			return rest[len(ch)+3:], true
		}
	}
	w.setRuntime("compose")
	return rest, true
}

// serviceName: a compose service or container name ([a-zA-Z0-9][a-zA-Z0-9_.-]*).
func serviceName(s string) bool {
	if s == "" || !isAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(isAlnum(c) || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// peelActors removes Ray (or another launcher's) actor tags; vLLM's own
// process tags stay for parseVLLMPrefix. A Ray tag may stand outside
// vLLM's. Ray's log deduplication appends " [repeated Nx across cluster]".
func peelActors(line string, w *Wrap) string {
	rest := line
	kept := ""
	for n := 0; n < maxTags; n++ {
		name, after, ok := cutProcessTag(rest)
		if !ok {
			break
		}
		if isVLLMProcess(name) {
			kept += rest[:len(rest)-len(after)]
		} else if w.Actor == "" {
			w.Actor = name
		}
		rest = after
	}
	if w.Actor == "" {
		if kept != "" {
			return kept + rest
		}
		return line
	}
	// the first deduplicated line also carries Ray's note (ray_logging
	// @ 1359121a _warn_once: " (Ray deduplicates logs by default. …)")
	if i := strings.LastIndex(rest, " [repeated "); i >= 0 && (strings.HasSuffix(rest, "x across cluster]") ||
		strings.Contains(rest[i:], "x across cluster] (Ray deduplicates logs")) {
		rest = rest[:i]
	}
	return kept + rest
}

// cutProcessTag reads "(Name pid=N) ", "(Name pid=N, ip=A) " or Ray's
// unnamed "(pid=N) " at the start of s and returns "Name pid=N…" and what
// follows the tag.
func cutProcessTag(s string) (name, rest string, ok bool) {
	if len(s) < 7 || s[0] != '(' {
		return "", s, false
	}
	end := strings.IndexByte(s, ')')
	if end < 0 || end > 200 {
		return "", s, false
	}
	name = s[1:end]
	var pid string
	if strings.HasPrefix(name, "pid=") {
		pid = name[len("pid="):]
	} else {
		i := strings.Index(name, " pid=")
		if i <= 0 {
			return "", s, false
		}
		pid = name[i+len(" pid="):]
	}
	if j := strings.IndexByte(pid, ','); j >= 0 {
		pid = pid[:j]
	}
	if _, okp := digits(pid); !okp {
		return "", s, false
	}
	rest = s[end+1:]
	switch {
	case strings.HasPrefix(rest, " "):
		rest = rest[1:]
	case rest == "":
	default:
		return "", s, false
	}
	return name, rest, true
}

// isVLLMProcess tells vLLM's own process names (decorate_logs) from a
// launcher's actor names.
func isVLLMProcess(name string) bool {
	for _, p := range []string{"APIServer", "ApiServer", "EngineCore", "VllmWorker", "Worker_", "Worker pid=", "Worker TP", "Worker rank", "DPCoordinator"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// unwrapDockerJSON reads one line of docker's json-file log driver.
func unwrapDockerJSON(line string, w *Wrap) (string, bool) {
	var rec struct {
		Log    *string `json:"log"`
		Stream string  `json:"stream"`
		Time   string  `json:"time"`
	}
	if json.Unmarshal([]byte(line), &rec) != nil || rec.Log == nil {
		return line, false
	}
	w.setRuntime("docker-json")
	w.Stream = rec.Stream
	if t, err := time.Parse(time.RFC3339Nano, rec.Time); err == nil {
		w.setTime(t)
	}
	l := strings.TrimSuffix(*rec.Log, "\n")
	return stripEscapes(l, w), true
}
