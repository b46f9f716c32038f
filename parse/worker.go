package parse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// WorkerKind says what a worker log line is.
type WorkerKind int

const (
	WOther      WorkerKind = iota
	WModel                 // Loading tokenizer from ... Vocab size: N Model: M
	WSeparator             // ====...
	WProcessing            // Processing: NAME (CLASS)
	WPrompts               // NAME: N prompts
	WResume                // NAME: N prompts, R resumed, G to go
	WSkip                  // NAME: skipped (already done: N records)
	WRunning               // Running N requests (concurrency=C, max_tokens=M)...
	WProgress              // D/T (E err) R req/s avg_comp=Ntok ETA=X
	WError                 // an error line, or a traceback line
)

var workerKindNames = [...]string{"other", "model", "separator", "processing", "prompts", "resume", "skip", "running", "progress", "error"}

func (k WorkerKind) String() string { return workerKindNames[k] }

// WorkerLine is one parsed line of the worker's log (inference_all.log). The
// Go worker writes the same format as the Python script it replaces.
type WorkerLine struct {
	Kind     WorkerKind
	Category string
	Class    string

	Tokenizer string // WModel
	Model     string // WModel
	Vocab     int    // WModel

	Prompts int // WPrompts, WResume: the category's prompt count
	Resumed int // WResume: records already present
	ToGo    int // WResume
	Done    int // WSkip: records already present; WProgress: completed

	Requests    int // WRunning
	Concurrency int // WRunning
	MaxTokens   int // WRunning

	Total     int           // WProgress
	Errors    int           // WProgress
	ReqPerSec float64       // WProgress
	AvgComp   int           // WProgress: mean completion tokens
	ETA       time.Duration // WProgress
	ETAKnown  bool          // WProgress: false for "ETA=?"

	Traceback bool   // WError: part of a Python or Go traceback
	Text      string // the whole line
}

// FormatProgress renders a progress line exactly as the parser reads it.
func FormatProgress(done, total, errs int, reqPerSec float64, avgComp int, eta time.Duration, etaKnown bool) string {
	return fmt.Sprintf("%d/%d (%d err) %.1f req/s avg_comp=%dtok ETA=%s", done, total, errs, reqPerSec, avgComp, FormatETA(eta, etaKnown))
}

// FormatETA renders an ETA as the worker log shows it: seconds under two
// minutes, minutes under two hours, else hours with one decimal; "?" if unknown.
func FormatETA(d time.Duration, known bool) string {
	switch {
	case !known || d < 0:
		return "?"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%.0fm", d.Minutes())
	default:
		return fmt.Sprintf("%.1fh", d.Hours())
	}
}

// FormatSkip and FormatResume are the skip and resume lines, shared by the
// worker that writes them and the parser that reads them.
func FormatSkip(cat string, done int) string {
	return fmt.Sprintf("%s: skipped (already done: %d records)", cat, done)
}

func FormatResume(cat string, prompts, resumed, toGo int) string {
	return fmt.Sprintf("%s: %d prompts, %d resumed, %d to go", cat, prompts, resumed, toGo)
}

// ParseWorkerLine parses one line of the worker log. Unknown lines come back
// as WOther with Text set; it never fails.
func ParseWorkerLine(line string) WorkerLine {
	w := WorkerLine{Kind: WOther, Text: line}
	s := strings.TrimSpace(line)
	switch {
	case s == "":
		return w
	case strings.HasPrefix(s, "===="):
		w.Kind = WSeparator
	case strings.HasPrefix(s, "Processing: "):
		parseProcessing(&w, s[len("Processing: "):])
	case strings.HasPrefix(s, "Running "):
		parseRunning(&w, s)
	case strings.HasPrefix(s, "Loading tokenizer from "):
		parseModel(&w, s)
	case s[0] >= '0' && s[0] <= '9' && parseProgress(&w, s):
	case parseCategoryLine(&w, s):
	case isTracebackLine(line) || isErrorLine(s):
		w.Kind = WError
		w.Traceback = isTracebackLine(line)
	}
	return w
}

func parseProcessing(w *WorkerLine, rest string) {
	w.Kind = WProcessing
	name, class := rest, ""
	if i := strings.LastIndexByte(rest, '('); i > 0 && strings.HasSuffix(rest, ")") {
		name, class = strings.TrimSpace(rest[:i]), rest[i+1:len(rest)-1]
	}
	w.Category, w.Class = name, class
}

// "Running 10000 requests (concurrency=150, max_tokens=10240)..."
func parseRunning(w *WorkerLine, s string) {
	f := strings.Fields(strings.NewReplacer("(", " ", ")", " ", ",", " ", "...", " ").Replace(s))
	if len(f) < 3 || f[2] != "requests" {
		return
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return
	}
	w.Kind, w.Requests = WRunning, n
	for _, kv := range f[3:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		x, _ := strconv.Atoi(v)
		switch k {
		case "concurrency":
			w.Concurrency = x
		case "max_tokens":
			w.MaxTokens = x
		}
	}
}

// "Loading tokenizer from /shared/kimi... Vocab size: 163840 Model: /shared/kimi"
func parseModel(w *WorkerLine, s string) {
	w.Kind = WModel
	rest := s[len("Loading tokenizer from "):]
	tok, after, _ := strings.Cut(rest, "...")
	w.Tokenizer = strings.TrimSpace(tok)
	if _, v, ok := strings.Cut(after, "Vocab size:"); ok {
		f := strings.Fields(v)
		if len(f) > 0 {
			w.Vocab, _ = strconv.Atoi(f[0])
		}
	}
	if _, m, ok := strings.Cut(after, "Model:"); ok {
		w.Model = strings.TrimSpace(m)
	}
}

// "50/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h"
func parseProgress(w *WorkerLine, s string) bool {
	f := strings.Fields(s)
	if len(f) < 3 {
		return false
	}
	d, t, ok := strings.Cut(f[0], "/")
	if !ok {
		return false
	}
	done, err1 := strconv.Atoi(d)
	total, err2 := strconv.Atoi(t)
	if err1 != nil || err2 != nil || !strings.HasPrefix(f[1], "(") || f[2] != "err)" {
		return false
	}
	errs, err := strconv.Atoi(f[1][1:])
	if err != nil {
		return false
	}
	w.Kind, w.Done, w.Total, w.Errors = WProgress, done, total, errs
	for i := 3; i < len(f); i++ {
		switch {
		case f[i] == "req/s" && i > 3:
			if v, err := strconv.ParseFloat(f[i-1], 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
				w.ReqPerSec = v // nan or inf (a zero elapsed time) reads as no rate
			}
		case strings.HasPrefix(f[i], "avg_comp="):
			w.AvgComp, _ = strconv.Atoi(strings.TrimSuffix(f[i][len("avg_comp="):], "tok"))
		case strings.HasPrefix(f[i], "ETA="):
			w.ETA, w.ETAKnown = parseETA(f[i][len("ETA="):])
		}
	}
	return true
}

func parseETA(s string) (time.Duration, bool) {
	if s == "" || s == "?" {
		return 0, false
	}
	unit := time.Second
	switch s[len(s)-1] {
	case 's':
		s = s[:len(s)-1]
	case 'm':
		unit, s = time.Minute, s[:len(s)-1]
	case 'h':
		unit, s = time.Hour, s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0) { // NaN too
		return 0, false
	}
	if d := v * float64(unit); d < math.MaxInt64 {
		return time.Duration(d), true
	}
	return math.MaxInt64, true // longer than a Duration holds: converting would wrap negative
}

// "NAME: N prompts", "NAME: N prompts, R resumed, G to go",
// "NAME: skipped (already done: N records)"
func parseCategoryLine(w *WorkerLine, s string) bool {
	name, rest, ok := strings.Cut(s, ": ")
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return false
	}
	if strings.HasPrefix(rest, "skipped (already done: ") {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rest, "skipped (already done: "), " records)"))
		if err != nil {
			return false
		}
		w.Kind, w.Category, w.Done = WSkip, name, n
		return true
	}
	var prompts, resumed, toGo int
	if n, err := fmt.Sscanf(rest, "%d prompts, %d resumed, %d to go", &prompts, &resumed, &toGo); err == nil && n == 3 {
		w.Kind, w.Category, w.Prompts, w.Resumed, w.ToGo = WResume, name, prompts, resumed, toGo
		return true
	}
	num, word, ok := strings.Cut(rest, " ")
	if !ok || word != "prompts" {
		return false
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return false
	}
	w.Kind, w.Category, w.Prompts = WPrompts, name, n
	return true
}

func isErrorLine(s string) bool {
	return isTracebackLine(s) ||
		strings.Contains(s, "Error") || strings.Contains(s, "ERROR") ||
		strings.HasPrefix(s, "error") || strings.Contains(s, "Exception") ||
		strings.HasPrefix(s, "panic:") || strings.HasPrefix(s, "FATAL")
}

// isTracebackLine knows Python tracebacks and Go panics by their shape.
func isTracebackLine(line string) bool {
	return strings.HasPrefix(line, "Traceback (most recent call last)") ||
		strings.HasPrefix(line, "  File \"") ||
		strings.HasPrefix(line, "goroutine ") ||
		strings.HasPrefix(line, "panic: ")
}
