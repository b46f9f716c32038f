package servers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// serverState is what the server log and the probes say.
type serverState struct {
	ready        bool
	phase        string // the log's lifecycle: "", startup, ready, crash, stop
	fault        string // a fault logged since the server last made progress
	hang         string // a hang logged (or 0 tok/s seen) since the server last made progress
	probe        serverProbe
	refused      int       // polls in a row /metrics was refused
	logSeen      bool      // the server log exists
	logGrew      bool      // it grew in this poll
	logGrewAt    time.Time // when it last grew (the first poll: its mtime)
	logMtime     time.Time // when the server log last changed
	crash        string
	crashAt      time.Time
	crashGeneric bool      // the cause kept is a bare "Traceback (most recent call last)" head
	stop         string    // the graceful stop's line, while phase is stop
	startWait    bool      // a hang line was noted while starting (vLLM workers compiling)
	endLogged    time.Time // the crash's or stop's own log time: a batch line printed in the same breath is not a revival
	lastLogged   time.Time // the newest own time of any line: periodic lines' ages are measured from it
	loggedSet    bool
	retractions  int
	dialect      parse.Dialect
	decode       map[rankKey]decodeSample // newest periodic line per DP rank, PP stage and phase (or vLLM engine)

	// prefill tallies from the log since the last snapshot: the log's
	// cache hit rate when /metrics gives none
	prefillCached, prefillNew int
	logHitRate                *float64 // the last hit rate the log gave

	// the previous /metrics sample, for rates from counter deltas
	prevMet   parse.ServerMetrics
	prevMetAt time.Time
	metStill  int // polls in a row /metrics showed running requests and no token generated

	// idleness: the own time of the newest request other than a health
	// check that completed (its access line), the newest periodic line's
	// host time, and the last line that made tokens (for "last batch
	// 14:02: 930 tok/s")
	workAt   time.Time
	newestAt time.Time
	lastWork decodeSample
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
	pd             int       // PD queues: #bootstrap-req, #inflight-req, #prealloc-req, #unbootstrapped-req, #transfer-req
	usage, gen     float64   // gen: generated tokens/s (a prefill line: 0)
	input          float64   // prompt tokens/s: progress too
	prefilled      int       // a prefill line's #new-token: progress too (SGLang's own line gives no rate)
	zero           int       // lines in a row with requests running and no token made
	prefilling     int       // a prefill line's #new-seq: requests being prefilled, load like running ones
	answered       bool      // a request completed after this line (its access line came later)
	at             time.Time // when it was written, in the host's zone (for "last batch 14:02")
}

// pdQueueKeys are the PD-disaggregation queues of SGLang's batch lines
// (metrics_reporter.py): prefill #bootstrap-req and #inflight-req (older
// #prealloc-req, #unbootstrapped-req), decode #prealloc-req and
// #transfer-req. Requests in them are load: the server works on them.
var pdQueueKeys = []string{"#bootstrap-req", "#inflight-req", "#prealloc-req", "#unbootstrapped-req", "#transfer-req"}

// hangLines: this many periodic lines in a row with requests running and
// no token made (vLLM prints one every 10 s) are a hang.
const hangLines = 3

// foldServerEvent folds one log record into the server's state: its
// fault class decides first (faultFolds, the ladder of endings before
// it), then its kind (kindFolds); a record in neither changes nothing.
func (sv *Set) foldServerEvent(s *srvWatch, ev parse.ServerEvent, now time.Time) {
	if ev.Dialect != parse.DialectUnknown {
		s.st.dialect = ev.Dialect
	}
	if ev.HasPrefix && !ev.Prefix.Time.IsZero() && (ev.Prefix.Time.After(s.st.lastLogged) || !s.st.loggedSet) {
		s.st.lastLogged, s.st.loggedSet = ev.Prefix.Time, true // vLLM's year-less times sort before the zero time
	}
	at := sv.zone(ev, s.st.logMtime, now) // the log's own time (events.go)
	fc := ev.Fault()
	if endsAlready(s.st.phase, ev, fc) {
		return
	}
	if fold, ok := faultFolds[fc]; ok {
		fold(sv, s, ev, at)
	} else if fold, ok := kindFolds[ev.Kind]; ok {
		fold(sv, s, ev, at)
	}
}

// serverFold folds one record, logged at at, into s.
type serverFold func(sv *Set, s *srvWatch, ev parse.ServerEvent, at time.Time)

// faultFolds: a record that tells of the server's life, in the order of
// docs/SERVER-STATES.md's ladder (crash, stop, then hang and fault with no
// ending) and the warning that changes no state.
var faultFolds = map[parse.Fault]serverFold{
	parse.FaultCrash:   (*Set).foldCrash,
	parse.FaultStop:    (*Set).foldStop,
	parse.FaultHang:    (*Set).foldHang,
	parse.FaultFault:   (*Set).foldFault,
	parse.FaultWarning: (*Set).foldWarning,
}

// kindFolds: the other records, by kind: a run's start and readiness, and
// the work it does.
var kindFolds = map[parse.ServerKind]serverFold{
	parse.SStartup: (*Set).foldStartup,
	parse.SReady:   (*Set).foldReady,
	parse.SAccess:  (*Set).foldAccess,
	parse.SRetract: (*Set).foldRetract,
	parse.SBatch:   (*Set).foldBatch,
	parse.SStats:   (*Set).foldStats,
}

func (sv *Set) foldCrash(s *srvWatch, ev parse.ServerEvent, at time.Time) {
	text := ev.Msg
	if len(ev.Lines) > 0 {
		text += " … " + ev.Lines[len(ev.Lines)-1]
	}
	text = parse.SanitizeLine([]byte(text), 300)
	generic := strings.HasPrefix(ev.Msg, "Traceback (most recent call last)")
	if s.st.phase != "crash" || s.st.crash == "" || s.st.crashGeneric && !generic && ev.Kind != parse.SSigquit && ev.Kind != parse.SCrashTail {
		// the first fatal line is the cause (a worker's death), not what
		// it brings down after it (EngineDeadError, SIGQUIT, cleanup);
		// a bare traceback head gives way to the line that names it
		s.st.crash, s.st.crashAt, s.st.crashGeneric = text, at, generic
	}
	if s.st.phase != "crash" {
		sv.tl.LogEvent(at, "server_crash", text, ev.Msg)
	}
	s.st.ready, s.st.phase, s.st.fault, s.st.hang = false, "crash", "", ""
	s.st.endLogged, s.st.decode = ev.Prefix.Time, nil
}

func (sv *Set) foldStop(s *srvWatch, ev parse.ServerEvent, at time.Time) {
	text := parse.SanitizeLine([]byte(ev.Msg), 300)
	sv.tl.LogEvent(at, "server_stop", "server stopping: "+text, ev.Msg)
	s.st.ready, s.st.phase, s.st.fault, s.st.hang, s.st.stop = false, "stop", "", "", text
	s.st.endLogged, s.st.decode = ev.Prefix.Time, nil
}

func (sv *Set) foldHang(s *srvWatch, ev parse.ServerEvent, at time.Time) {
	text := parse.SanitizeLine([]byte(ev.Msg), 300)
	if s.st.phase == "startup" {
		// vLLM waits on its workers while they compile: a note (once), not a hang
		if !s.st.startWait {
			sv.tl.LogEvent(at, "server_warning", text, ev.Msg)
		}
		s.st.startWait = true
		return
	}
	if s.st.hang == "" {
		sv.tl.LogEvent(at, "server_hang", text, ev.Msg)
	}
	s.st.hang = text
}

func (sv *Set) foldFault(s *srvWatch, ev parse.ServerEvent, at time.Time) {
	text := parse.SanitizeLine([]byte(ev.Msg), 300)
	if s.st.fault == "" {
		sv.tl.LogEvent(at, "server_fault", text, ev.Msg)
	}
	s.st.fault = text
}

func (sv *Set) foldWarning(_ *srvWatch, ev parse.ServerEvent, at time.Time) {
	sv.tl.LogEvent(at, "server_warning", parse.SanitizeLine([]byte(ev.Msg), 300), ev.Msg)
}

func (sv *Set) foldStartup(s *srvWatch, ev parse.ServerEvent, at time.Time) {
	if ev.Startup.Stage == "launch" {
		s.noteLaunch(ev, at)
	}
	if s.st.phase != "startup" {
		// a new run: what the old one's periodic lines said is not this one's
		s.st.startWait, s.st.decode, s.st.lastWork = false, nil, decodeSample{}
	}
	s.st.ready, s.st.phase, s.st.hang = false, "startup", ""
}

func (sv *Set) foldReady(s *srvWatch, ev parse.ServerEvent, at time.Time) {
	if !s.st.ready {
		sv.tl.LogEvent(at, "server_ready", "server ready", ev.Msg)
	}
	s.st.ready, s.st.phase, s.st.fault, s.st.hang = true, "ready", "", ""
}

func (sv *Set) foldAccess(s *srvWatch, ev parse.ServerEvent, _ time.Time) {
	if probePath(ev.Access.Path) || ev.Access.Status >= 400 {
		return // a health check or a rejected request did no work
	}
	if ev.HasPrefix && ev.Prefix.Time.After(s.st.workAt) {
		s.st.workAt = ev.Prefix.Time
	}
	for k, d := range s.st.decode {
		if d.prefilling > 0 && !d.answered {
			d.answered = true // in the log's order: one-second stamps tie
			s.st.decode[k] = d
		}
	}
}

func (sv *Set) foldRetract(s *srvWatch, ev parse.ServerEvent, _ time.Time) {
	s.st.retractions += max(ev.Retract.Requests, 1)
}

func (sv *Set) foldBatch(s *srvWatch, ev parse.ServerEvent, at time.Time) {
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
	d := decodeSample{running: b.RunningReqs.V, queue: b.QueueReqs.V, pd: pd, usage: b.TokenUsage.V,
		gen: b.GenThroughput.V, input: b.InputThroughput.V}
	if b.Phase == parse.Prefill {
		// SGLang's prefill line has a rate only on a PD prefill server
		// (scheduler_metrics_mixin.py log_prefill_stats @ 01bb3c80):
		// the tokens it took in are its progress
		d.prefilled = b.NewTokens.V
	}
	if b.Phase == parse.Prefill && b.NewSeq.V > 0 {
		// the requests this prefill batch takes in are work in hand: a
		// prefill-only server chunk-prefilling one long prompt shows
		// them under #new-seq only (#running-req 0) for the whole prompt
		d.prefilling = b.NewSeq.V
	}
	sv.foldSample(s, rankKey{ev.Prefix.Ranks.DP, ev.Prefix.Ranks.PP, b.Phase}, ev, d, at)
}

func (sv *Set) foldStats(s *srvWatch, ev parse.ServerEvent, at time.Time) {
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

// endsAlready is the ladder of endings (docs/SERVER-STATES.md): an ending
// is decided by precedence, not by which line came last. Once a run has
// crashed, a stop that follows is the crash's own teardown (vLLM's
// launcher stops uvicorn the ordinary way when its engine died:
// launcher.py terminate_if_errored), so the crash stands. Once a run was
// stopped, the teardown it causes (children ending, SIGQUIT,
// kill_process_tree) and further stop lines change nothing. Only a new
// run (a startup or ready line) or, after a stop, a fatal error of its own
// (an exception while draining) moves on.
func endsAlready(phase string, ev parse.ServerEvent, fc parse.Fault) bool {
	switch phase {
	case "crash":
		return fc == parse.FaultStop
	case "stop":
		return fc == parse.FaultStop || fc == parse.FaultCrash && stopTeardown(ev.Kind)
	}
	return false
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
func (sv *Set) foldSample(s *srvWatch, key rankKey, ev parse.ServerEvent, d decodeSample, at time.Time) {
	if s.st.decode == nil {
		s.st.decode = map[rankKey]decodeSample{}
	}
	d.logged, d.at = ev.Prefix.Time, at
	if old, ok := s.st.decode[key]; ok {
		d.interval = old.interval
		if gap := d.logged.Sub(old.logged); gap > 0 {
			if d.interval == 0 {
				d.interval = gap
			} else {
				d.interval += (gap - d.interval) / 4
			}
		}
		if d.running > 0 && !d.progress() {
			d.zero = old.zero + 1
		}
	} else if d.running > 0 && !d.progress() {
		d.zero = 1
	}
	s.st.decode[key] = d
	if d.gen > 0 {
		s.st.lastWork = d
	}
	switch {
	case d.progress():
		s.st.fault, s.st.hang = "", "" // the scheduler makes progress again
	case d.zero >= hangLines && s.st.hang == "":
		text := fmt.Sprintf("%d requests running at 0 tok/s for %d lines in a row", d.running, d.zero)
		s.st.hang = text
		sv.tl.LogEvent(at, "server_hang", text, ev.Msg)
	}
}

// progress: the line says the server made tokens, or took a prompt's in.
func (d decodeSample) progress() bool { return d.gen+d.input > 0 || d.prefilled > 0 }

// probePath: the paths monitors, load balancers and the worker's own
// readiness wait ask; a request to one of them is no work for the server.
func probePath(p string) bool {
	p, _, _ = strings.Cut(p, "?")
	switch p {
	case "/health", "/health_generate", "/healthz", "/ping", "/metrics", "/v1/models", "/get_model_info", "/model_info",
		"/get_server_info", "/server_info", "/version", "/liveness", "/readiness", "/load":
		return true
	}
	return false
}

// noteLaunch keeps a server's start line (its newest parse.MaxLaunches).
func (s *srvWatch) noteLaunch(ev parse.ServerEvent, at time.Time) {
	set, ok := parse.ParseLaunch(ev.Msg)
	if !ok || at.IsZero() {
		return
	}
	for _, l := range s.launches {
		if l.At.Equal(at) {
			return // read twice (the first read's L record and its history)
		}
	}
	s.launches = append(s.launches, parse.ServerLaunch{At: at, Settings: set})
	if len(s.launches) > parse.MaxLaunches {
		s.launches = s.launches[len(s.launches)-parse.MaxLaunches:]
	}
}

// Eras are the host's servers' eras, their start lines merged in time
// (several servers' records cannot be told apart by time: each start opens
// an era).
func (sv *Set) Eras() []parse.Era {
	var all []parse.ServerLaunch
	for _, s := range sv.list {
		all = append(all, s.launches...)
	}
	return parse.Eras(all)
}

// foldStarts keeps the start lines the agent found before a log's history
// (remote/starts.go): only their eras, never the server's state.
func (sv *Set) foldStarts(s *srvWatch, lines []string, now time.Time) {
	for _, l := range lines {
		ev := parse.ParseServerLine(l)
		if ev.Kind == parse.SStartup && ev.Startup.Stage == "launch" {
			s.noteLaunch(ev, sv.zone(ev, s.st.logMtime, now))
		}
	}
}
