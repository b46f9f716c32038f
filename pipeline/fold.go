package pipeline

import (
	"fmt"
	"strconv"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// catState is what the watcher knows of one category between polls.
type catState struct {
	name, class         string
	budget              int64
	maxSamples          int
	raw, errs, prompts  *remote.Counter
	runs                *remote.Tail
	lines, errLines     int64
	promptLines         int64
	known               bool
	lastGrowth          time.Time
	mtime               time.Time
	win                 parse.RateWindow // growths seen while it is worked on: the rate
	lastSample          time.Time
	meanGap             time.Duration // EWMA of the time between lines
	rates               *samples
	stalled             bool
	currentSince        time.Time // when it became the category being worked on (zero: unknown, judge by growth)
	currentKnown        bool      // currentSince has been judged for this spell of work
	currentWeak         bool      // currentSince is only the log's last line: the category is at least that old
	quietFrom           time.Time // the stall clock's start: the last growth, or currentSince if later
	configs             []string  // distinct server config keys, in order seen
	configDesc          map[string]string
	logTarget           int
	logResumed, logToGo int
	logProgress         parse.WorkerLine
	logProgressAt       time.Time
	logProgressFresh    bool // read as it was written (not history from a first read)
	logSkipped          bool
	logFailures         int64           // failures the log reported since its header (parse.FailureTally)
	countErr            string          // why the last count failed (countError)
	scanVoidPID         int             // the worker whose resume-scan figures the file outgrew (rewritten since)
	tok                 tokAcc          // tokens and runs of its records, from the bytes the count reads (tokens.go)
	runLines            []parse.RunLine // runs.jsonl, one per run (provenance.go)
	disagree            map[string]bool // sources that disagree with the file (crosscheck.go)
}

// serverState is what the server log and the probes say.
type serverState struct {
	ready       bool
	phase       string // the log's lifecycle: "", startup, ready, crash, stop
	fault       string // a fault logged since the server last made progress
	hang        string // a hang logged (or 0 tok/s seen) since the server last made progress
	probe       serverProbe
	refused     int       // polls in a row /metrics was refused
	logSeen     bool      // the server log exists
	logGrew     bool      // it grew in this poll
	logGrewAt   time.Time // when it last grew (the first poll: its mtime)
	logMtime    time.Time // when the server log last changed
	crash       string
	crashAt     time.Time
	stop        string    // the graceful stop's line, while phase is stop
	startWait   bool      // a hang line was noted while starting (vLLM workers compiling)
	endLogged   time.Time // the crash's or stop's own log time: a batch line printed in the same breath is not a revival
	lastLogged  time.Time // the newest own time of any line: periodic lines' ages are measured from it
	loggedSet   bool
	retractions int
	dialect     parse.Dialect
	decode      map[rankKey]decodeSample // newest periodic line per DP rank, PP stage and phase (or vLLM engine)

	// prefill tallies from the log since the last snapshot: the log's
	// cache hit rate when /metrics gives none
	prefillCached, prefillNew int
	logHitRate                *float64 // the last hit rate the log gave

	// the previous /metrics sample, for rates from counter deltas
	prevMet   parse.ServerMetrics
	prevMetAt time.Time
	metStill  int // polls in a row /metrics showed running requests and no token generated
}

// rankKey is a rank that logs its own periodic lines. DP ranks (and vLLM
// engines) serve different requests and are summed; PP stages of one DP rank
// each log the same batch and are not (TP and EP ranks don't log at all, or
// log the same batch). Prefill and decode lines of one rank are kept apart
// (a PD prefill server prints only prefill lines). vLLM: dp is
// engineKeyBase+N for "Engine 00N" and aggregatedKey for "N Engines
// Aggregated" or the V0 line.
type rankKey struct {
	dp, pp int
	phase  parse.Phase
}

const (
	aggregatedKey = -2
	engineKeyBase = 1000
)

type decodeSample struct {
	logged         time.Time     // its own timestamp
	interval       time.Duration // the usual gap between this rank's lines (0: one line seen)
	running, queue int
	pd             int     // PD queues: #bootstrap-req, #inflight-req, #prealloc-req, #unbootstrapped-req, #transfer-req
	usage, gen     float64 // gen: generated tokens/s (a prefill line: 0)
	input          float64 // prompt tokens/s: progress too
	zero           int     // lines in a row with requests running and no token made
}

// pdQueueKeys are the PD-disaggregation queues of SGLang's batch lines
// (metrics_reporter.py): prefill #bootstrap-req and #inflight-req (older
// #prealloc-req, #unbootstrapped-req), decode #prealloc-req and
// #transfer-req. Requests in them are load: the server works on them.
var pdQueueKeys = []string{"#bootstrap-req", "#inflight-req", "#prealloc-req", "#unbootstrapped-req", "#transfer-req"}

// hangLines: this many periodic lines in a row with requests running and
// no token made (vLLM prints one every 10 s) are a hang.
const hangLines = 3

func (w *Watcher) foldTails(res remote.PollResult, now time.Time) {
	wl := res.Tails[0]
	for _, sv := range w.sv.list {
		w.sv.foldServerTail(sv, res, now, w.polls)
	}
	if len(wl.Lines) > 0 {
		w.live.logLines = true
	}
	w.log.lastLine = wl.ModTime // the host's clock: a first read is not fresh activity
	w.foldTailLines(res, now, true)
}

// foldTailLines folds the lines this poll's tails read: the display rings,
// the worker log's facts, the server log's events, runs.jsonl. A poll whose
// link dropped during the batch (stale, not folded otherwise) still folds
// them: its tails have moved past them, and a line skipped is a line lost.
// flush lets a quiet server log end its last event (not in a stale poll).
func (w *Watcher) foldTailLines(res remote.PollResult, now time.Time, flush bool) {
	wl := res.Tails[0]
	recent := wl.Err == nil && now.Sub(wl.ModTime) < time.Minute
	for i, l := range wl.Lines {
		w.log.worker.Add(parse.SanitizeLine([]byte(l.Text), 4096))
		fresh := w.polls > 1 || recent && len(wl.Lines)-i <= 20
		w.foldWorkerLine(parse.ParseWorkerLine(l.Text), now, fresh)
	}
	for _, sv := range w.sv.list {
		w.sv.foldServerLines(sv, res, now, flush, w.polls)
	}
	if len(res.Tails) < 2 {
		return
	}
	byRuns := make(map[string]*catState, len(w.cnt.cats)) // not a scan of the categories per tail: 10,000 of each is 10^8
	for _, c := range w.cnt.cats {
		byRuns[c.runs.Path] = c
	}
	for _, up := range res.Tails[1:] { // after the server logs: runs.jsonl
		if c := byRuns[up.Path]; c != nil {
			c.foldRuns(up)
		}
	}
}

// foldWorkerLine hands one worker log line to the parts it speaks of: the
// log's own facts, the worker's liveness, the categories it names. fresh
// says it was written about now (read live, or among the last lines of a
// log that just grew), not history from a first read.
func (w *Watcher) foldWorkerLine(l parse.WorkerLine, now time.Time, fresh bool) {
	cur := w.log.current // a failure counts against the category it was logged under
	watching := w.polls > 1
	failed := w.log.fold(l, now, watching && w.cnt.cats[l.Category] != nil)
	w.live.foldLogLine(l)
	w.cnt.foldLogLine(l, cur, failed, now, watching, fresh)
}

// foldLogLine folds what a worker log line says of a category: its class,
// when it became current, its target, skip and progress, its failures.
func (k *counts) foldLogLine(l parse.WorkerLine, cur string, failed bool, now time.Time, watching, fresh bool) {
	if c, ok := k.cats[cur]; ok && failed {
		c.logFailures++
	}
	switch l.Kind {
	case parse.WProcessing:
		if c, ok := k.cats[l.Category]; ok {
			if l.Class != "" {
				c.class = l.Class
			}
			if watching {
				c.currentSince, c.currentKnown = now, true // a (re)start reached it while we watch: the stall clock starts now
			}
			c.logProgress, c.logProgressFresh = parse.WorkerLine{}, false // the last run's figures are not this run's
			c.logFailures = 0
		}
	case parse.WPrompts, parse.WResume:
		if c, ok := k.cats[l.Category]; ok {
			c.logTarget, c.logResumed, c.logToGo = l.Prompts, l.Resumed, l.ToGo
		}
	case parse.WSkip:
		if c, ok := k.cats[l.Category]; ok {
			c.logSkipped = true
		}
	case parse.WProgress:
		if c, ok := k.cats[cur]; ok {
			c.logProgress, c.logProgressAt, c.logProgressFresh = l, now, fresh
		}
	}
}

func (sv *serverSet) foldServerEvent(s *srvWatch, ev parse.ServerEvent, now time.Time) {
	if ev.Dialect != parse.DialectUnknown {
		s.st.dialect = ev.Dialect
	}
	if ev.HasPrefix && !ev.Prefix.Time.IsZero() && (ev.Prefix.Time.After(s.st.lastLogged) || !s.st.loggedSet) {
		s.st.lastLogged, s.st.loggedSet = ev.Prefix.Time, true // vLLM's year-less times sort before the zero time
	}
	at := sv.ev.serverTime(ev, s.st.logMtime, now) // the log's own time (events.go)
	fc := ev.Fault()
	if s.st.phase == "stop" && (fc == parse.FaultCrash && stopTeardown(ev.Kind) || fc == parse.FaultStop) {
		return // a stop's own teardown: its children end, SIGQUIT, kill_process_tree
	}
	switch fc {
	case parse.FaultCrash:
		text := ev.Msg
		if len(ev.Lines) > 0 {
			text += " … " + ev.Lines[len(ev.Lines)-1]
		}
		text = parse.SanitizeLine([]byte(text), 300)
		if (ev.Kind != parse.SSigquit && ev.Kind != parse.SCrashTail) || s.st.crash == "" || s.st.phase != "crash" {
			s.st.crash, s.st.crashAt = text, at // the cause, not the cleanup that follows it
		}
		if s.st.phase != "crash" {
			sv.ev.logEvent(at, "server_crash", text, ev.Msg)
		}
		s.st.ready, s.st.phase, s.st.fault, s.st.hang = false, "crash", "", ""
		s.st.endLogged, s.st.decode = ev.Prefix.Time, nil
		return
	case parse.FaultStop:
		text := parse.SanitizeLine([]byte(ev.Msg), 300)
		sv.ev.logEvent(at, "server_stop", "server stopping: "+text, ev.Msg)
		s.st.ready, s.st.phase, s.st.fault, s.st.hang, s.st.stop = false, "stop", "", "", text
		s.st.endLogged, s.st.decode = ev.Prefix.Time, nil
		return
	case parse.FaultHang:
		text := parse.SanitizeLine([]byte(ev.Msg), 300)
		if s.st.phase == "startup" {
			// vLLM waits on its workers while they compile: a note (once), not a hang
			if !s.st.startWait {
				sv.ev.logEvent(at, "server_warning", text, ev.Msg)
			}
			s.st.startWait = true
			return
		}
		if s.st.hang == "" {
			sv.ev.logEvent(at, "server_hang", text, ev.Msg)
		}
		s.st.hang = text
		return
	case parse.FaultFault:
		text := parse.SanitizeLine([]byte(ev.Msg), 300)
		if s.st.fault == "" {
			sv.ev.logEvent(at, "server_fault", text, ev.Msg)
		}
		s.st.fault = text
		return
	case parse.FaultWarning:
		sv.ev.logEvent(at, "server_warning", parse.SanitizeLine([]byte(ev.Msg), 300), ev.Msg)
		return
	}
	switch ev.Kind {
	case parse.SReady:
		if !s.st.ready {
			sv.ev.logEvent(at, "server_ready", "server ready", ev.Msg)
		}
		s.st.ready, s.st.phase, s.st.fault, s.st.hang = true, "ready", "", ""
	case parse.SStartup:
		if s.st.phase != "startup" {
			s.st.startWait = false
		}
		s.st.ready, s.st.phase, s.st.hang = false, "startup", ""
	case parse.SRetract:
		s.st.retractions += max(ev.Retract.Requests, 1)
	case parse.SBatch:
		b := ev.Batch
		if b.Phase == parse.Prefill {
			s.st.prefillCached += b.CachedTokens.V
			s.st.prefillNew += b.NewTokens.V
			if !b.CachedTokens.OK && b.CacheHitPct.OK { // v0.3–v0.4.1: a lifetime rate in the line
				h := b.CacheHitPct.V / 100
				s.st.logHitRate = &h
			}
		}
		if !b.RunningReqs.OK || !s.serving(ev) {
			return
		}
		pd := 0
		for _, k := range pdQueueKeys {
			if n, ok := b.Num(k); ok {
				pd += int(n)
			}
		}
		sv.foldSample(s, rankKey{ev.Prefix.Ranks.DP, ev.Prefix.Ranks.PP, b.Phase}, ev, decodeSample{running: b.RunningReqs.V,
			queue: b.QueueReqs.V, pd: pd, usage: b.TokenUsage.V, gen: b.GenThroughput.V, input: b.InputThroughput.V}, at)
	case parse.SStats:
		vs := ev.Stats
		if vs.PrefixHitPct.OK {
			h := vs.PrefixHitPct.V / 100
			s.st.logHitRate = &h
		}
		if !vs.GenTokS.OK || !s.serving(ev) {
			return // the V0 "Prefix cache hit rate: GPU: …" line carries nothing else
		}
		key := rankKey{aggregatedKey, -1, parse.Decode}
		if n, err := strconv.Atoi(vs.Engine); err == nil {
			key.dp = engineKeyBase + n
		}
		sv.foldSample(s, key, ev, decodeSample{running: vs.Running.V, queue: vs.Waiting.V,
			usage: vs.KVUsagePct.V / 100, gen: vs.GenTokS.V, input: vs.PromptTokS.V}, at)
	}
}

// stopTeardown: what a server prints while a graceful stop takes it down.
func stopTeardown(k parse.ServerKind) bool {
	return k == parse.SSigquit || k == parse.SCrashTail || k == parse.SChildDied
}

// serving takes a periodic line (a batch or stats line) as the server's
// word that it serves, however far back its ready line is: the phase
// becomes ready. A line printed within seconds of a crash or stop is a
// rank finishing its step, not a revival.
func (s *srvWatch) serving(ev parse.ServerEvent) bool {
	if (s.st.phase == "crash" || s.st.phase == "stop") && ev.Prefix.Time.Sub(s.st.endLogged) < 10*time.Second {
		return false
	}
	s.st.phase = "ready" // ready (the flag) stays the ready line's: it keeps the server_ready event
	return true
}

// foldSample keeps a rank's newest periodic line, with the usual gap
// between its lines (for staleness) and the run of lines with requests
// running and no progress (a hang). Progress clears a fault and a hang.
func (sv *serverSet) foldSample(s *srvWatch, key rankKey, ev parse.ServerEvent, d decodeSample, at time.Time) {
	if s.st.decode == nil {
		s.st.decode = map[rankKey]decodeSample{}
	}
	d.logged = ev.Prefix.Time
	if old, ok := s.st.decode[key]; ok {
		d.interval = old.interval
		if gap := d.logged.Sub(old.logged); gap > 0 {
			if d.interval == 0 {
				d.interval = gap
			} else {
				d.interval += (gap - d.interval) / 4
			}
		}
		if d.running > 0 && d.gen+d.input == 0 {
			d.zero = old.zero + 1
		}
	} else if d.running > 0 && d.gen+d.input == 0 {
		d.zero = 1
	}
	s.st.decode[key] = d
	switch {
	case d.gen+d.input > 0:
		s.st.fault, s.st.hang = "", "" // the scheduler makes progress again
	case d.zero >= hangLines && s.st.hang == "":
		text := fmt.Sprintf("%d requests running at 0 tok/s for %d lines in a row", d.running, d.zero)
		s.st.hang = text
		sv.ev.logEvent(at, "server_hang", text, ev.Msg)
	}
}

// foldRuns reads new runs.jsonl lines and notes each server configuration.
func (c *catState) foldRuns(up remote.TailUpdate) {
	for _, l := range up.Lines {
		r, err := parse.ParseRunLine([]byte(l.Text))
		if err == nil && r.IsEnd() {
			continue // how a run ended is the night report's, not a configuration
		}
		if err == nil && r.Run != "" {
			c.noteRun(r)
		}
		// A snapshot that failed (parse.ConfigUnknown; before that, a hash
		// of an empty info) says nothing about the configuration: it is not one.
		if err != nil || !r.Snapshot.Known() {
			continue
		}
		snap := r.Snapshot
		if c.configDesc == nil {
			c.configDesc = map[string]string{}
		}
		if _, seen := c.configDesc[snap.ConfigKey]; !seen {
			c.configs = append(c.configs, snap.ConfigKey)
			kv := fmt.Sprint(snap.Info["kv_cache_dtype"])
			if res, ok := snap.Info["kv_cache_dtype_resolved"]; ok {
				kv += "(" + fmt.Sprint(res) + ")"
			}
			c.configDesc[snap.ConfigKey] = fmt.Sprintf("kv_cache_dtype=%s quantization=%v model=%v",
				kv, snap.Info["quantization"], snap.Info["model_path"])
		}
	}
}

// noteWorkerJSON takes the categories worker.json names, with their class
// and budget.
func (k *counts) noteWorkerJSON(st *parse.WorkerState) {
	for _, c := range st.Categories {
		cs := k.cat(c.Name)
		if c.Class != "" {
			cs.class = c.Class
		}
		if c.TokenBudget > 0 {
			cs.budget = c.TokenBudget
		}
	}
}

// fold takes the new line counts and updates growth, rates and stalls.
func (ct *counts) fold(res remote.PollResult, now time.Time, wjson *parse.WorkerState) {
	k := 0
	for _, n := range ct.order {
		c := ct.cats[n]
		if k+1 >= len(res.Counts) || res.Counts[k].Path != c.raw.Path {
			break // named by worker.json after this poll was built: counted from the next one
		}
		raw, errs := res.Counts[k], res.Counts[k+1]
		k += 2
		var prompts remote.CountUpdate
		if k < len(res.Counts) && res.Counts[k].Path == c.prompts.Path {
			prompts = res.Counts[k]
			k++
		} else {
			prompts = remote.CountUpdate{Lines: c.promptLines}
		}
		c.countErr = countError(c, raw, errs, prompts)
		if raw.Reset && c.known && wjson != nil {
			c.scanVoidPID = wjson.PID // rewritten since this worker's resume scan: its extra_lines no longer apply
		}
		if !keepsLastCount(c, raw) {
			if !raw.Missing {
				c.mtime = raw.Info.ModTime
			}
			grew := raw.Lines - c.lines
			if !c.known {
				c.known, c.lastGrowth = true, c.mtime // one-shot: the file's own time
			} else {
				ct.sample(c, grew, now)
			}
			c.lines = raw.Lines
		}
		if errs.Err == nil {
			c.errLines = errs.Lines
		}
		if prompts.Err == nil {
			c.promptLines = prompts.Lines
		}
	}
}

// sample folds one poll's growth: the rate window (growths only: the first
// poll's count is history, its time unknown), the sparkline's per-poll
// rate, and the usual gap between records for the stall limit.
func (k *counts) sample(c *catState, grew int64, now time.Time) {
	if grew != 0 {
		c.win.Add(now, c.lines+grew)
	}
	if !c.lastSample.IsZero() {
		if dt := now.Sub(c.lastSample); dt > 0 {
			c.rates.add(float64(max(grew, 0)) / dt.Minutes())
		}
	}
	c.lastSample = now
	if grew > 0 {
		if !c.lastGrowth.IsZero() {
			gap := now.Sub(c.lastGrowth) / time.Duration(grew)
			if c.meanGap == 0 {
				c.meanGap = gap
			} else {
				c.meanGap += (gap - c.meanGap) / 5
			}
		}
		c.lastGrowth = now
	}
}
