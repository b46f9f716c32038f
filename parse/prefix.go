package parse

import (
	"strings"
	"time"
)

// Opt is a value that a line may or may not carry.
type Opt[T any] struct {
	V  T
	OK bool
}

func some[T any](v T) Opt[T] { return Opt[T]{V: v, OK: true} }

// Ranks are the parallelism tags of a scheduler line ("DP3 TP3 EP3"); -1 means absent.
type Ranks struct {
	DP, TP, PP, EP, AttnCP, MoeDP int
}

// NoRanks is the Ranks of a line without tags.
var NoRanks = Ranks{-1, -1, -1, -1, -1, -1}

// Prefix is what stands before a server log message.
type Prefix struct {
	// Time is the host's wall-clock time as printed, with no zone (stored as
	// UTC). Old SGLang prints no date and vLLM no year: see HasDate, HasYear.
	Time    time.Time
	HasDate bool
	HasYear bool
	HasMS   bool
	Ranks   Ranks
	Level   string // uvicorn and vLLM only: INFO, WARNING, ERROR, ...
	Process string // vLLM only: "EngineCore_DP0 pid=413"
	Source  string // vLLM only: "loggers.py:118"
}

// parseSGLangPrefix reads "[2026-02-03 14:05:12.345 DP3 TP3] msg",
// "[14:05:12] msg" and the like.
func parseSGLangPrefix(line string) (p Prefix, msg string, ok bool) {
	if len(line) < 10 || line[0] != '[' {
		return p, line, false
	}
	end := strings.IndexByte(line, ']')
	if end < 0 || end+1 > len(line) {
		return p, line, false
	}
	inner := line[1:end]
	var y, mo, d int
	switch {
	case len(inner) >= 19 && inner[4] == '-' && inner[7] == '-' && inner[10] == ' ':
		var okd bool
		y, okd = digits(inner[0:4])
		mo2, ok2 := digits(inner[5:7])
		d2, ok3 := digits(inner[8:10])
		if !okd || !ok2 || !ok3 {
			return p, line, false
		}
		mo, d = mo2, d2
		p.HasDate, p.HasYear = true, true
		inner = inner[11:]
	case len(inner) >= 8 && inner[2] == ':':
	default:
		return p, line, false
	}
	h, m, s, ok := clock(inner)
	if !ok {
		return p, line, false
	}
	inner = inner[8:]
	ns := 0
	if len(inner) >= 4 && (inner[0] == '.' || inner[0] == ',') { // "," is logging's default asctime
		ms, okm := digits(inner[1:4])
		if !okm {
			return p, line, false
		}
		ns, p.HasMS, inner = ms*1e6, true, inner[4:]
	}
	if !p.HasDate {
		y, mo, d = 0, 1, 1
	}
	p.Time = time.Date(y, time.Month(mo), d, h, m, s, ns, time.UTC)
	p.Ranks = NoRanks
	for len(inner) > 0 {
		if inner[0] != ' ' {
			return p, line, false
		}
		inner = inner[1:]
		tag := inner
		if i := strings.IndexByte(inner, ' '); i >= 0 {
			tag, inner = inner[:i], inner[i:]
		} else {
			inner = ""
		}
		if !setRank(&p.Ranks, tag) {
			return p, line, false
		}
	}
	msg = line[end+1:]
	if len(msg) > 0 && msg[0] == '[' {
		msg = bracketFields(&p, msg)
	}
	if len(msg) > 0 && msg[0] == ' ' {
		msg = msg[1:]
	}
	return p, msg, true
}

// bracketFields reads the fields a SGLANG_LOGGING_CONFIG_PATH format puts
// right after the time, e.g. "[%(asctime)s][%(filename)s:%(lineno)d][%(levelname)s]: ":
// "[scheduler.py:123]" is the Source, "[INFO]" the Level. It returns the
// message after them (and after ": "), or msg unchanged when they are not that.
func bracketFields(p *Prefix, msg string) string {
	rest := msg
	var src, lvl string
fields:
	for n := 0; n < 4 && len(rest) > 0 && rest[0] == '['; n++ {
		end := strings.IndexByte(rest, ']')
		if end < 0 || end > 120 {
			break
		}
		f := rest[1:end]
		switch {
		case isLevel(f):
			lvl = f
		case strings.Contains(f, ".py:") || strings.HasSuffix(f, ".py"):
			src = f
		default:
			break fields // not a field: the message starts here
		}
		rest = rest[end+1:]
	}
	if src == "" && lvl == "" {
		return msg
	}
	p.Source, p.Level = src, lvl
	rest = strings.TrimPrefix(rest, ":")
	return rest
}

func isLevel(s string) bool {
	switch s {
	case "DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL":
		return true
	}
	return false
}

func setRank(r *Ranks, tag string) bool {
	i := len(tag)
	for i > 0 && tag[i-1] >= '0' && tag[i-1] <= '9' {
		i--
	}
	if i == 0 || i == len(tag) {
		return false
	}
	n, ok := digits(tag[i:])
	if !ok {
		return false
	}
	switch tag[:i] {
	case "DP":
		r.DP = n
	case "TP":
		r.TP = n
	case "PP":
		r.PP = n
	case "EP":
		r.EP = n
	case "ATTN_CP":
		r.AttnCP = n
	case "MOE_DP":
		r.MoeDP = n
	default:
		return false // an unknown tag: keep parsing safe, treat as not a prefix
	}
	return true
}

var vllmLevels = []string{"INFO ", "WARNING ", "ERROR ", "DEBUG ", "CRITICAL "}

// parseVLLMPrefix reads "(EngineCore_DP0 pid=413) INFO 06-11 11:46:37 [loggers.py:118] msg",
// the older "INFO 08-14 10:22:31 metrics.py:341] msg", nested process tags
// ("(APIServer pid=1) (EngineCore_DP0 pid=322) DEBUG …", Process is the
// innermost), and a tagged line with no level and time of its own, such as
// uvicorn's "(APIServer pid=4170) INFO:     Application startup complete.".
func parseVLLMPrefix(line string) (p Prefix, msg string, ok bool) {
	rest := line
	tagged := false
	for n := 0; n < maxTags; n++ {
		name, after, okt := cutProcessTag(rest)
		if !okt {
			break
		}
		p.Process, rest, tagged = name, after, true
	}
	if !tagged && strings.HasPrefix(rest, "(") {
		return p, line, false
	}
	p.Ranks = NoRanks
	var level string
	for _, l := range vllmLevels {
		if strings.HasPrefix(rest, l) {
			level = l
			break
		}
	}
	if level == "" || len(rest) < len(level)+15 {
		return p, rest, tagged
	}
	body := rest[len(level):]
	if body[2] != '-' || body[5] != ' ' {
		return p, rest, tagged
	}
	mo, ok1 := digits(body[0:2])
	d, ok2 := digits(body[3:5])
	h, m, s, ok3 := clock(body[6:])
	if !ok1 || !ok2 || !ok3 {
		return p, rest, tagged
	}
	body = strings.TrimPrefix(body[14:], " ")
	body = strings.TrimPrefix(body, "[")
	end := strings.Index(body, "] ")
	if end < 0 {
		return p, rest, tagged
	}
	p.Level = level[:len(level)-1]
	p.Time = time.Date(0, time.Month(mo), d, h, m, s, 0, time.UTC)
	p.HasDate = true
	p.Source = body[:end]
	return p, body[end+2:], true
}

// clock reads "HH:MM:SS" at the start of s.
func clock(s string) (h, m, sec int, ok bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, 0, 0, false
	}
	h, ok1 := digits(s[0:2])
	m, ok2 := digits(s[3:5])
	sec, ok3 := digits(s[6:8])
	return h, m, sec, ok1 && ok2 && ok3
}

// digits parses a short run of ASCII digits without allocating.
func digits(s string) (int, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
