package parse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
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
	WError                 // an error line, or a traceback line (IsErrorLine)
	WFinished              // All categories finished.
	WWaiting               // Server URL unavailable (REASON): waiting for /health
	WBack                  // Server URL is back after DURATION
	WKill                  // synthwatch kill: stopping pid N (...), written by the kill action
)

var workerKindNames = [...]string{"other", "model", "separator", "processing", "prompts", "resume", "skip", "running", "progress", "error",
	"finished", "waiting", "back", "kill"}

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

	Traceback bool // WError: part of a Python or Go traceback

	Server string        // WWaiting, WBack: the server's URL
	Reason string        // WWaiting: why the server is unavailable
	Down   time.Duration // WBack: how long it was unavailable
	PID    int           // WKill: the pid being stopped

	Text string // the whole line
}

// The fixed lines of the worker log, written by the worker (and the kill
// action) and read by the dashboard. Lines with figures in them have a
// Format function below; ParseWorkerLine reads them all back.
const (
	// Separator frames the Processing line.
	Separator = "============================================================"
	// FinishedLine ends a run that did every category. (The Python script
	// wrote it without the period; the parser reads both.)
	FinishedLine = "All categories finished."
	// KillMarker starts the line the kill action appends before it signals
	// (FormatKill): the pid that dies after it was stopped, not crashed.
	KillMarker = "synthwatch kill: stopping pid "

	finishedHead  = "All categories finished"
	bannerHead    = "synthwatch worker "
	heartbeatHead = "waiting: "
	waitingSuffix = "): waiting for /health"
	backInfix     = " is back after "
)

// FormatFinishedFailed ends a run that went through every category and
// could not do some (named): not FinishedLine, which says the job is done.
func FormatFinishedFailed(failed []string) string {
	return fmt.Sprintf("Went through every category; %d failed: %s.", len(failed), strings.Join(failed, ", "))
}

// FormatProcessing is the line that starts a category.
func FormatProcessing(cat, class string) string {
	return fmt.Sprintf("Processing: %s (%s)", cat, class)
}

// FormatPrompts is a category's prompt count when nothing is resumed.
func FormatPrompts(cat string, prompts int) string {
	return fmt.Sprintf("%s: %d prompts", cat, prompts)
}

// FormatRunning says how many requests a category sends, and how.
func FormatRunning(requests, concurrency, maxTokens int) string {
	return fmt.Sprintf("Running %d requests (concurrency=%d, max_tokens=%d)...", requests, concurrency, maxTokens)
}

// FormatWaiting is the worker's line when the server stops answering: it
// waits for /health before it sends more.
func FormatWaiting(server, reason string) string {
	return fmt.Sprintf("Server %s unavailable (%s%s", server, reason, waitingSuffix)
}

// FormatBack is the worker's line when the server answers again after down.
func FormatBack(server string, down time.Duration) string {
	return "Server " + server + backInfix + down.Round(time.Second).String()
}

// FormatBanner is the line a worker run starts with. Its run id begins
// with the run's start (UTC, 20060102T150405Z): the log's only clock.
func FormatBanner(version string, pid int, run, server, api string, categories int) string {
	return fmt.Sprintf("%s%s (pid %d, run %s): server %s, api %s, %d categories", bannerHead, version, pid, run, server, api, categories)
}

// ParseBanner reads a run's banner line back: its run id and, from the id,
// its start (ok false for another line; start zero for an id of another form).
func ParseBanner(line string) (run string, start time.Time, ok bool) {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, bannerHead) {
		return "", time.Time{}, false
	}
	_, rest, ok := strings.Cut(s, ", run ")
	if !ok {
		return "", time.Time{}, false
	}
	run, _, ok = strings.Cut(rest, "): ")
	if !ok || run == "" || strings.ContainsAny(run, " ()") {
		return "", time.Time{}, false
	}
	head, _, _ := strings.Cut(run, "-")
	start, _ = time.Parse("20060102T150405Z", head)
	return run, start, true
}

// FormatHeartbeat is the worker's line when no answer has come for a while
// (worker.HeartbeatAfter): n requests in flight, the oldest sent oldest ago.
// ParseWorkerLine reads it as an ordinary line; ParseHeartbeat reads it.
func FormatHeartbeat(n int, oldest time.Duration) string {
	return fmt.Sprintf("%s%d requests in flight, oldest %s", heartbeatHead, n, oldest.Round(time.Second))
}

// ParseHeartbeat reads a FormatHeartbeat line back.
func ParseHeartbeat(line string) (n int, oldest time.Duration, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(line), heartbeatHead)
	if !found {
		return 0, 0, false
	}
	num, age, found := strings.Cut(rest, " requests in flight, oldest ")
	if !found {
		return 0, 0, false
	}
	n, err := strconv.Atoi(num)
	d, derr := time.ParseDuration(age)
	if err != nil || derr != nil || n < 0 || d < 0 {
		return 0, 0, false
	}
	return n, d, true
}

// FormatKill is the kill marker line for pid, stopped with SIGTERM and
// then SIGKILL after grace.
func FormatKill(pid int, grace time.Duration) string {
	return fmt.Sprintf("%s%d (SIGTERM, then SIGKILL after %ds)", KillMarker, pid, int(grace.Seconds()+0.5))
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
	case strings.HasPrefix(s, finishedHead):
		w.Kind = WFinished
	case strings.HasPrefix(s, KillMarker) && parseKill(&w, s):
	case strings.HasPrefix(s, "Server ") && parseGate(&w, s):
	case strings.HasPrefix(s, "Processing: "):
		parseProcessing(&w, s[len("Processing: "):])
	case strings.HasPrefix(s, "Running "):
		parseRunning(&w, s)
	case strings.HasPrefix(s, "Loading tokenizer from "):
		parseModel(&w, s)
	case isDigit(s[0]) && parseProgress(&w, s):
	case parseCategoryLine(&w, s):
	case IsErrorLine(line):
		w.Kind = WError
		w.Traceback = isTracebackLine(line)
	}
	return w
}

// "synthwatch kill: stopping pid 4242 (SIGTERM, then SIGKILL after 30s)"
func parseKill(w *WorkerLine, s string) bool {
	f := strings.Fields(s[len(KillMarker):])
	if len(f) == 0 {
		return false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return false
	}
	w.Kind, w.PID = WKill, pid
	return true
}

// "Server URL unavailable (REASON): waiting for /health",
// "Server URL is back after 1m5s"
func parseGate(w *WorkerLine, s string) bool {
	rest := s[len("Server "):]
	if head, ok := strings.CutSuffix(rest, waitingSuffix); ok {
		url, reason, ok := strings.Cut(head, " unavailable (")
		if !ok {
			return false
		}
		w.Kind, w.Server, w.Reason = WWaiting, url, reason
		return true
	}
	url, d, ok := strings.Cut(rest, backInfix)
	if !ok {
		return false
	}
	w.Kind, w.Server = WBack, url
	w.Down, _ = time.ParseDuration(d)
	return true
}

func parseProcessing(w *WorkerLine, rest string) {
	w.Kind = WProcessing
	name, class := rest, ""
	if i := strings.LastIndexByte(rest, '('); i > 0 && strings.HasSuffix(rest, ")") {
		name, class = strings.TrimSpace(rest[:i]), rest[i+1:len(rest)-1]
	}
	w.Category, w.Class = name, class
}

var runningSeps = strings.NewReplacer("(", " ", ")", " ", ",", " ", "...", " ")

// "Running 10000 requests (concurrency=150, max_tokens=10240)..."
func parseRunning(w *WorkerLine, s string) {
	f := strings.Fields(runningSeps.Replace(s))
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
	var buf [12]string // a progress line has 7 fields: no allocation per line
	f := fieldsInto(buf[:0], s)
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
	progressFigures(w, f)
	return true
}

// progressFigures reads a progress line's optional fields after its
// counts: "R req/s", "avg_comp=Ntok", "ETA=…".
func progressFigures(w *WorkerLine, f []string) {
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
}

// fieldsInto is strings.Fields appending to dst: a caller's array keeps a
// first read's 20,000 progress lines from allocating a slice each.
func fieldsInto(dst []string, s string) []string {
	start := -1
	for i := 0; i < len(s); {
		c, size, space := s[i], 1, false
		if c < utf8.RuneSelf {
			space = asciiSpace[c]
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
		}
		if space {
			if start >= 0 {
				dst, start = append(dst, s[start:i]), -1
			}
		} else if start < 0 {
			start = i
		}
		i += size
	}
	if start >= 0 {
		dst = append(dst, s[start:])
	}
	return dst
}

var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

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

// IsErrorLine is the one rule for "this log line reports an error", in the
// worker's log and the server's alike: the worker parser's WError, the
// server parser's SError (with the server's own ERROR and CRITICAL levels)
// and the log pane's jump to the next error all use it. It knows a Python
// traceback or Go panic by its shape, and otherwise an error, an exception,
// a failure, a timeout or running out of memory by the words.
func IsErrorLine(line string) bool {
	s := strings.TrimSpace(line)
	if isTracebackLine(line) || isTracebackLine(s) {
		return true
	}
	for _, w := range errorWords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return strings.HasPrefix(s, "error") || strings.HasPrefix(s, "panic:") || strings.HasPrefix(s, "FATAL")
}

// errorWords mark an error line wherever they stand in it.
var errorWords = []string{
	"Traceback", "Error", "ERROR", "Exception", "CRITICAL", "NCCL error", "hit an exception", "out of memory", "failed",
	"Request waiting timeout reached", "Request running timeout reached", // SGLang aborting a request
}

// isTracebackLine knows Python tracebacks and Go panics by their shape.
func isTracebackLine(line string) bool {
	return strings.HasPrefix(line, "Traceback (most recent call last)") ||
		strings.HasPrefix(line, "  File \"") ||
		strings.HasPrefix(line, "goroutine ") ||
		strings.HasPrefix(line, "panic: ")
}

// FailureTally counts the failures a worker log reports, one each whatever
// wrote it: a Python traceback is one (with its frames, its exception line
// and the tracebacks chained to it by "During handling of the above
// exception…"), and an error line outside a traceback is one (the Go
// worker's "NAME: id X failed: …", a bare "TimeoutError: timed out").
// The old script's threads print their tracebacks at once, line by line,
// interleaved: each header opens one, each exception line closes one.
// The script counts its failures in "(N err)" only every 50 successes; a
// category that hangs shows its failures here first.
type FailureTally struct {
	open    int // tracebacks whose exception line has not come yet
	chained int // chained tracebacks announced: the next headers are the same failures
}

// Fold reads the next line of the log and says whether it reports a new
// failure.
func (t *FailureTally) Fold(l WorkerLine) bool {
	s := l.Text
	trim := strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "Traceback (most recent call last)"):
		t.open++
		if t.chained > 0 {
			t.chained--
			return false
		}
		return true
	case trim == "" || t.open > 0 && (s[0] == ' ' || s[0] == '\t'):
		return false // a frame, its source line or its carets
	case trim == "During handling of the above exception, another exception occurred:" ||
		trim == "The above exception was the direct cause of the following exception:":
		t.chained++
		return false
	case t.open > 0:
		t.open-- // an exception line ends a traceback
		return false
	}
	t.chained = 0
	return l.Kind == WError
}
