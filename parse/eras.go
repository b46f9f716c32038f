package parse

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"time"
)

// A server's start line carries its arguments; each opens an era, which
// lasts until the next start. Records that name no run (the old script's)
// are placed by their own time in the era they fall in. The launch lines
// read (one line each):
//
//	SGLang engine.py @ 18bfdd16  logger.info(f"{server_args=}")           server_args=ServerArgs(model_path='…', kv_cache_dtype='fp8_e4m3', …)
//	SGLang engine.py @ 001067ff  f"server_args={server_args.resolved_dict()}"  server_args={'model_path': '…', 'kv_cache_dtype': 'auto', …}
//	vLLM entrypoints/utils.py @ 00fc8809  log_non_default_args             non-default args: {'model': '…', 'kv_cache_dtype': 'fp8', …}
//
// (the same heads parseStartup names the "launch" stage by, server.go).

// LaunchKeys are the arguments an era is told by: the KV cache's dtype, the
// quantization, the model, the memory fraction and the speculative
// settings, in SGLang's and vLLM's names. Others are not kept.
var LaunchKeys = []string{
	"kv_cache_dtype", "quantization", "model_path", "model", "dtype",
	"mem_fraction_static", "gpu_memory_utilization",
	"speculative_algorithm", "speculative_draft_model_path", "speculative_num_steps",
	"speculative_eagle_topk", "speculative_num_draft_tokens", "speculative_config",
}

// maxSettingLen caps one argument's text (a speculative_config dict).
const maxSettingLen = 200

// ParseLaunch reads a server log message (the line without its prefix, as
// ServerEvent.Msg) that starts a server, and returns its LaunchKeys as
// "key=value" pairs in LaunchKeys' order (None and empty values dropped).
// ok is false for any other message.
func ParseLaunch(msg string) (settings []string, ok bool) {
	var body string
	for _, h := range []string{"server_args=ServerArgs(", "server_args={", "non-default args: {"} {
		if i := strings.Index(msg, h); i >= 0 {
			body, ok = msg[i+len(h):], true
			break
		}
	}
	if !ok {
		return nil, false
	}
	got := map[string]string{}
	for _, part := range splitTopLevel(body) {
		k, v, found := strings.Cut(part, "=") // ServerArgs(key=value)
		if q := strings.TrimSpace(part); strings.HasPrefix(q, "'") || strings.HasPrefix(q, `"`) {
			k, v, found = strings.Cut(q, ":") // {'key': value}
		}
		if !found {
			continue
		}
		k, v = unquote(strings.TrimSpace(k)), unquote(strings.TrimSpace(v))
		if v == "" || v == "None" {
			continue
		}
		got[k] = v
	}
	for _, k := range LaunchKeys {
		if v, has := got[k]; has {
			settings = append(settings, k+"="+SanitizeLine([]byte(v), maxSettingLen))
		}
	}
	return settings, true
}

// splitTopLevel splits a Python repr's members at the commas outside
// quotes and brackets, up to the bracket that closes the whole.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			i = quoteEnd(s, i)
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth == 0 {
				return append(out, s[start:i])
			}
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:]) // cut: what was read
}

// quoteEnd is the index of the quote that closes the one at i (a
// backslash escapes), or the last index when none does.
func quoteEnd(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i
		}
	}
	return len(s) - 1
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// KVLabel names a configuration by its KV cache dtype, the difference
// users look for (resolved: the dtype the server resolved "auto" to, when
// it says).
func KVLabel(kv, resolved string) string {
	if resolved != "" && (kv == "auto" || kv == "" || kv == "<nil>") {
		kv = resolved
	}
	switch k := strings.ToLower(kv); {
	case strings.Contains(k, "fp8"):
		return "fp8-kv"
	case k == "bfloat16" || k == "bf16":
		return "bf16"
	case k == "float16" || k == "fp16" || k == "half":
		return "fp16"
	case k == "" || k == "<nil>" || k == "auto":
		return "auto-kv"
	default:
		return SanitizeString(kv)
	}
}

// ServerLaunch is one start line: when it was logged and its settings
// (ParseLaunch's).
type ServerLaunch struct {
	At       time.Time
	Settings []string
}

// Era is a server's run from one start line to the next.
type Era struct {
	Start    time.Time
	Label    string // KVLabel of its kv_cache_dtype, "#hash" when two differ in other settings
	Settings string // its settings, one line
}

// InferredFromLog is what every view says beside an era's label: the
// records were placed by their time, not written by a run that recorded
// its server.
const InferredFromLog = "(inferred from the server log)"

// MaxLaunches bounds the start lines kept per server log.
const MaxLaunches = 256

// Eras orders launches by time into eras, one per start (a start logged
// twice at one time with the same settings is one), each labelled.
func Eras(launches []ServerLaunch) []Era {
	ls := append([]ServerLaunch(nil), launches...)
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].At.Before(ls[j].At) })
	var out []Era
	byLabel := map[string]string{} // label → the settings that took it
	for _, l := range ls {
		set := strings.Join(l.Settings, " ")
		if n := len(out); n > 0 && out[n-1].Start.Equal(l.At) && out[n-1].Settings == set {
			continue
		}
		label := KVLabel(settingOf(l.Settings, "kv_cache_dtype"), "")
		if s, taken := byLabel[label]; taken && s != set {
			h := sha256.Sum256([]byte(set))
			label += fmt.Sprintf("#%x", h[:3])
		}
		if _, taken := byLabel[label]; !taken {
			byLabel[label] = set
		}
		out = append(out, Era{Start: l.At, Label: label, Settings: set})
	}
	return out
}

func settingOf(settings []string, key string) string {
	for _, s := range settings {
		if k, v, _ := strings.Cut(s, "="); k == key {
			return v
		}
	}
	return ""
}
