package pipeline

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

func (w *Watcher) buildSnapshot(s *Snapshot, reads []serverRead, vr vitalsRead, now time.Time) {
	s.Worker = w.live.view(w.log.finished, w.log.current)
	var each []Server
	s.Server, each = w.sv.serverViews(reads, now, w.live.waitingServer())
	if len(each) > 1 || each[0].Role == RoleRouter {
		s.Servers = each
	} else {
		s.Server.Name, s.Server.Role = "", "" // one server: the object as it always was, with the URL it probed
	}
	if s.Server.Source != "" && !s.Server.FiguresStale {
		w.sv.thr.add(s.Server.GenThroughput)
	} else {
		w.sv.thr.add(math.NaN())
	}
	s.Server.Throughput = w.sv.thr.values()
	w.serverFigures(s, each, reads, now)
	for _, n := range w.cnt.order {
		s.Categories = append(s.Categories, w.cnt.view(w.cnt.cats[n], s.Worker, s.Server.State, now, w.live.wjson, &w.log))
	}
	w.live.stall(s, now, w.o.StallAfter)
	w.cnt.noteClassRates(s.Categories)
	s.ETASeconds, s.ETAPart = w.cnt.pipelineETA(s.Categories)
	s.CompletionTokens, s.TokensUnknown, s.TokensPartial = totalTokens(s.Categories)
	w.cnt.crossChecks(s, now, w.live.wjson, w.log.lastLine)
	w.base.fold(s, now, w.cnt.cats, w.sv.first.retractions)
	w.live.events(s.Worker, now, w.lastSnap.Time)
	w.doneEvents(s, now)
	w.vit.fold(vr, s.Worker, now) // gpu_idle needs the worker judged
	s.Vitals = w.vit.view()
	s.Events = w.timeline.Recent(50)
}

func (sv *serverSet) serverView(s *srvWatch, met parse.ServerMetrics, metErr error, now time.Time, waiting bool) Server {
	v := Server{URL: s.spec.URL, URLFrom: s.spec.From, Name: s.name, Role: s.role, State: ServerUnknown, Retractions: s.st.retractions, LastCrash: s.st.crash}
	if !s.st.crashAt.IsZero() {
		t := s.st.crashAt.UTC()
		v.LastCrashAt = &t
	}
	switch s.st.dialect {
	case parse.DialectSGLang:
		v.Dialect = "sglang"
	case parse.DialectVLLM:
		v.Dialect = "vllm"
	}
	logFig, logAge, logStale, logOK := s.logFigures(now)
	logLive := logOK && !logStale
	logHit := s.logHitRate()
	if metErr == nil {
		v.Source = "metrics"
		v.RunningReqs, v.QueueReqs, v.TokenUsage = int(met.RunningReqs.V), int(met.QueueReqs.V), met.TokenUsage.V
		gen, hit, havePrev := s.metricRates(met, now)
		gauge := met.GenThroughput.OK && met.GenThroughput.V > 0 && met.RunningReqs.V > 0
		switch {
		case gen != nil && *gen > 0:
			v.GenThroughput = *gen
		case gauge:
			// SGLang counts generated tokens when a request finishes: long
			// requests leave the counter still while they generate. The
			// gauge is the scheduler's last decode figure.
			v.GenThroughput = met.GenThroughput.V
		case logLive:
			v.GenThroughput = logFig.GenThroughput // no previous sample, or the counters were reset
		case gen != nil:
			v.GenThroughput = *gen
		case !havePrev && met.GenThroughput.OK:
			v.GenThroughput = met.GenThroughput.V
		}
		switch {
		case hit != nil:
			v.CacheHitRate = hit
		case logHit != nil:
			v.CacheHitRate = logHit
		}
		if met.Dialect == parse.DialectVLLM {
			v.Dialect = "vllm"
		}
		return sv.judgeServer(s, v, now, waiting)
	}
	if logOK {
		v.Source = "log"
		v.RunningReqs, v.QueueReqs, v.GenThroughput, v.TokenUsage = logFig.RunningReqs, logFig.QueueReqs, logFig.GenThroughput, logFig.TokenUsage
		v.CacheHitRate = logHit
		a := logAge.Seconds()
		v.FiguresAgeSeconds, v.FiguresStale = &a, logStale
	}
	return sv.judgeServer(s, v, now, waiting)
}

// judgeServer sets the state and its reason from this poll's witnesses.
func (sv *serverSet) judgeServer(s *srvWatch, v Server, now time.Time, waiting bool) Server {
	f := serverFacts{metrics: s.st.probe.metrics, health: s.st.probe.health, refused: s.st.refused,
		phase: s.st.phase, fault: s.st.fault, hang: s.st.hang, stop: s.st.stop, logSeen: s.st.logSeen, logGrew: s.st.logGrew,
		waiting: waiting, load: v.RunningReqs + v.QueueReqs, crash: s.st.crash, url: s.spec.URL}
	if v.FiguresStale {
		f.load = 0 // old figures say nothing of the load now
	}
	if f.hang == "" && v.Source == "metrics" && s.st.metStill >= hangLines {
		f.hang = fmt.Sprintf("%d requests running, no token generated for %d polls", v.RunningReqs, s.st.metStill)
	}
	if f.phase == "" && s.st.ready {
		f.phase = "ready"
	}
	if s.st.logSeen && !s.st.logGrewAt.IsZero() {
		f.logAge = max(now.Sub(s.st.logGrewAt), 0)
		age := f.logAge.Seconds()
		v.LogAgeSeconds = &age
	}
	v.State, v.Reason = serverStateFor(f)
	v.Metrics, v.Health, v.WorkerWaiting = f.metrics, f.health, f.waiting
	if v.State == ServerDown || v.State == ServerCrashed || v.State == ServerStopped {
		// a dead server serves nothing: its last log line's figures are history
		v.Source, v.RunningReqs, v.QueueReqs, v.GenThroughput, v.TokenUsage, v.CacheHitRate = "", 0, 0, 0, 0, nil
		v.FiguresAgeSeconds, v.FiguresStale = nil, false
	}
	return v
}

// logFigures sums the newest periodic line of each DP rank (or vLLM
// engine). The PP stages of one DP rank log the same batch: they are not
// summed, each figure is the stage's highest (usage: the fullest stage's
// pool); a rank's prefill and decode lines are merged the same way. TP/EP
// ranks don't print. A line is live while its age (from the newest line of
// the log, plus the time since the log last changed) is within staleAfter of
// its own interval; whatever else grows the file does not make it younger.
// With no live line, the newest lines' figures come back with stale set and
// their age; ok is false when the log gave no periodic line at all.
func (s *srvWatch) logFigures(now time.Time) (v Server, age time.Duration, stale, ok bool) {
	if len(s.st.decode) == 0 {
		return v, 0, false, false
	}
	sinceWrite := time.Duration(0)
	if !s.st.logMtime.IsZero() {
		sinceWrite = max(now.Sub(s.st.logMtime), 0)
	}
	ageOf := func(d decodeSample) time.Duration {
		return max(s.st.lastLogged.Sub(d.logged), 0) + sinceWrite
	}
	var newest time.Time
	first := true
	live := false
	for _, d := range s.st.decode {
		if first || d.logged.After(newest) { // vLLM's year-less times sort before the zero time
			newest, first = d.logged, false
		}
		if ageOf(d) <= staleAfter(d) {
			live = true
		}
	}
	aggregated := false
	for k, d := range s.st.decode {
		if k.dp == aggregatedKey && newest.Sub(d.logged) <= 15*time.Second {
			aggregated = true
		}
	}
	perDP := map[int]decodeSample{}
	for k, d := range s.st.decode {
		if live && ageOf(d) > staleAfter(d) || !live && newest.Sub(d.logged) > 15*time.Second {
			continue // SGLang logs no batch line when idle: an old one is not live
		}
		if aggregated && k.dp >= engineKeyBase {
			continue // vLLM's aggregated line already sums its engines
		}
		cur, seen := perDP[k.dp]
		if !seen {
			perDP[k.dp] = d
			continue
		}
		cur.running, cur.queue, cur.pd = max(cur.running, d.running), max(cur.queue, d.queue), max(cur.pd, d.pd)
		cur.gen, cur.usage = math.Max(cur.gen, d.gen), math.Max(cur.usage, d.usage)
		perDP[k.dp] = cur
	}
	for _, d := range perDP {
		v.RunningReqs += d.running
		v.QueueReqs += d.queue + d.pd
		v.GenThroughput += d.gen
		v.TokenUsage = math.Max(v.TokenUsage, d.usage)
	}
	for _, d := range s.st.decode {
		if d.logged.Equal(newest) {
			age = ageOf(d)
		}
	}
	return v, age, !live, true
}

// staleAfter: a periodic line is stale after a few of its own intervals,
// and never before 30 s (vLLM prints every 10 s; SGLang every 40 decode
// steps, or once per prefill chunk).
func staleAfter(d decodeSample) time.Duration {
	return max(3*d.interval, 30*time.Second)
}

// logHitRate is the log's prefix-cache hit rate: SGLang's prefill lines
// since the last snapshot (#cached-token over #cached-token + #new-token),
// else the last rate a line printed (vLLM stats, old SGLang). The tallies
// start again at each snapshot.
func (s *srvWatch) logHitRate() *float64 {
	if total := s.st.prefillCached + s.st.prefillNew; total > 0 {
		h := float64(s.st.prefillCached) / float64(total)
		s.st.logHitRate = &h
	}
	s.st.prefillCached, s.st.prefillNew = 0, 0
	return s.st.logHitRate
}

// metricRates computes throughput and hit rate from the counters' deltas
// since the previous /metrics sample: generation tokens per second of the
// time between the two polls, and cached over prompt tokens (SGLang) or
// prefix-cache hits over queries (vLLM). A counter that went down means the
// server restarted: no figure this poll. havePrev is false on the first
// sample. The sample is kept for the next poll.
func (s *srvWatch) metricRates(met parse.ServerMetrics, now time.Time) (gen, hit *float64, havePrev bool) {
	prev, at := s.st.prevMet, s.st.prevMetAt
	s.st.prevMet, s.st.prevMetAt = met, now
	if at.IsZero() || prev.Dialect != met.Dialect {
		return nil, nil, false
	}
	dt := now.Sub(at).Seconds()
	if dt <= 0 {
		return nil, nil, false
	}
	delta := func(cur, old parse.Opt[float64]) (float64, bool) {
		if !cur.OK || !old.OK || cur.V < old.V {
			return 0, false
		}
		return cur.V - old.V, true
	}
	restarted := false
	for _, c := range [][2]parse.Opt[float64]{{met.GenTokens, prev.GenTokens}, {met.PromptTokens, prev.PromptTokens},
		{met.CachedTokens, prev.CachedTokens}, {met.PrefixQueries, prev.PrefixQueries}, {met.PrefixHits, prev.PrefixHits}} {
		if c[0].OK && c[1].OK && c[0].V < c[1].V {
			restarted = true
		}
	}
	if restarted {
		return nil, nil, true
	}
	if d, ok := delta(met.GenTokens, prev.GenTokens); ok {
		g := d / dt
		gen = &g
		// a hang: requests running, no token counted, and no gauge (vLLM) or a zero one
		if d == 0 && met.RunningReqs.V > 0 && (!met.GenThroughput.OK || met.GenThroughput.V == 0) {
			s.st.metStill++
		} else {
			s.st.metStill = 0
		}
	}
	if dc, ok := delta(met.CachedTokens, prev.CachedTokens); ok {
		if dp, ok := delta(met.PromptTokens, prev.PromptTokens); ok && dp > 0 {
			h := math.Min(1, dc/dp)
			hit = &h
		}
	} else if dh, ok := delta(met.PrefixHits, prev.PrefixHits); ok {
		if dq, ok := delta(met.PrefixQueries, prev.PrefixQueries); ok && dq > 0 {
			h := math.Min(1, dh/dq)
			hit = &h
		}
	}
	return gen, hit, true
}

// view decides a category's figures and state: the one place a
// state is decided; status, --follow, the dashboard and the fleet row all
// read it from the Snapshot.
func (k *counts) view(c *catState, wk Worker, server ServerState, now time.Time, wjson *parse.WorkerState, lg *logs) Category {
	v := Category{Name: c.name, Class: c.class, Done: c.lines, Errors: c.errLines, TokenBudget: c.budget, Rates: c.rates.values()}
	if !c.lastGrowth.IsZero() {
		t := c.lastGrowth.UTC()
		v.LastGrowth = &t
	}
	var js *parse.CategoryState
	if wjson != nil {
		for i := range wjson.Categories {
			if wjson.Categories[i].Name == c.name {
				js = &wjson.Categories[i]
			}
		}
	}
	switch {
	case js != nil && js.Target > 0:
		v.Target, v.TargetSource = int64(js.Target), parse.WorkerStateFile
	case c.logTarget > 0:
		v.Target, v.TargetSource = int64(c.logTarget), "log"
	default:
		v.Target, v.TargetSource = c.promptLines, "prompts"
		if c.maxSamples > 0 && int64(c.maxSamples) < v.Target {
			v.Target = int64(c.maxSamples)
		}
	}
	countFigures(c, js, wjson != nil && c.scanVoidPID != 0 && c.scanVoidPID == wjson.PID, &v)
	tokenFigures(c, js, &v)
	provenance(c, &v)
	current := wk.Category == c.name
	live := current && Alive(wk.State)
	if live && js != nil {
		v.Window, v.WindowReason = js.Window, js.WindowReason
	}
	switch {
	case !live:
		c.currentSince, c.currentKnown, c.currentWeak = time.Time{}, false, false
		c.win.Reset() // a later run is measured on its own
	case !c.currentKnown || c.currentWeak:
		// judged on the evidence at whatever poll the worker is first seen on it
		t, weak := k.becameCurrent(c, wk, wjson, lg)
		if weak && c.currentWeak && c.currentSince.Before(t) {
			t = c.currentSince // at least as old as the log's last line when first seen
		}
		c.currentSince, c.currentWeak, c.currentKnown = t, weak, !t.IsZero()
	}
	switch {
	case js != nil && (js.State == parse.CatSkipped || js.State == parse.CatDone), v.Target > 0 && v.Done >= v.Target,
		budgetReached(v) && !live:
		v.State = StateDone // "skipped" is a later run finding it done: one final state
	case js == nil && c.logSkipped:
		v.State = StateDone
	case js != nil && js.State == parse.CatFailed:
		v.State = StateFailed
	case live:
		v.State = StateRunning
	case current && wk.State == WorkerDied:
		v.State, v.Reason = StateDied, "the worker died on it"
		if wk.Reason != "" {
			v.Reason += ": " + wk.Reason
		}
	case current && wk.State == WorkerStopped, js != nil && js.State == parse.CatStopped:
		v.State, v.Reason = StateStopped, "the worker was stopped on it"
		if current && wk.ByYou {
			v.State, v.Reason = StateStopped, "stopped by you"
		}
	case v.Done > 0:
		v.State = StatePartial // some records, and no worker on it
	default:
		v.State = StatePending
	}
	k.stall(c, &v, now)
	if why := unserved(v, c, wk, server, now); why != "" {
		v.Reason = why // no rate and no ETA until it is back; the stall clock runs on
	} else if v.State == StateRunning {
		v.RatePerMin = k.rate(c, js, wjson, now)
		v.TokPerSec = tokPerSec(v)
		v.ETASeconds = eta(v)
	}
	if len(c.configs) > 1 {
		v.Warnings = append(v.Warnings, fmt.Sprintf("records from %d server configurations: %s → %s",
			len(c.configs), c.configDesc[c.configs[0]], c.configDesc[c.configs[len(c.configs)-1]]))
	}
	return v
}

// unserved says why a running category is not being served, "" if it is:
// the worker waits for the server (worker.json), or the server is down or
// crashed and the file has not grown for 30 s (records still arriving mean
// the server serves, whatever the probe of a wrong URL says).
func unserved(v Category, c *catState, wk Worker, server ServerState, now time.Time) string {
	switch {
	case v.State != StateRunning:
		return ""
	case wk.Phase == parse.WorkerWaitingServer:
		return "the worker waits for the server"
	case (server == ServerDown || server == ServerCrashed) && now.Sub(c.lastGrowth) > 30*time.Second:
		return "the server is " + string(server)
	}
	return ""
}

// stall marks the category being worked on as stalled when its JSONL has
// not grown for longer than StallAfter, or 5× its usual gap between lines if
// that is longer. Only growth clears a stall; log lines do not count.
func (k *counts) stall(c *catState, v *Category, now time.Time) {
	if v.State != StateRunning {
		c.stalled = false // not being worked on: nothing to stall
		return
	}
	limit := k.stallAfter
	if g := 5 * c.meanGap; g > limit {
		limit = g
	}
	// quiet since the last record, or since the category became current
	// (its file may hold records from an earlier run); a weak start (only
	// the log's last line) counts when nothing else does
	last := c.lastGrowth
	if c.currentSince.After(last) && (!c.currentWeak || last.IsZero()) {
		last = c.currentSince
	}
	c.quietFrom = last
	since := now.Sub(last)
	if last.IsZero() {
		since = 0 // no witness of when it began: no claim
	}
	switch {
	case !c.stalled && since > limit:
		c.stalled = true
		// stamped when it became a stall and keyed by the last growth, so a
		// dashboard opened during the stall records the same stall once
		at := last.Add(limit)
		k.tl.Add(Event{Time: at.UTC(), Kind: "stall_start", Category: c.name,
			Text: parse.SanitizeString(fmt.Sprintf("%s: no new records for %s (since %s)", c.name, FormatDuration(limit), last.Local().Format("01-02 15:04:05"))),
			Key:  fmt.Sprintf("stall_start|%s|%d", c.name, last.UnixNano())})
	case c.stalled && since <= limit:
		c.stalled = false
		c.win.Reset() // the pace from before the stall is not today's
		k.tl.note(now, "stall_end", c.name, fmt.Sprintf("%s: records flow again", c.name))
	}
	if c.stalled {
		v.State, v.Reason = StateStalled, "no new records for "+FormatDuration(since)
		if v.Errors > 0 {
			v.Reason += fmt.Sprintf(", %d errors", v.Errors)
		}
	}
}

// pipelineETA adds the running category's ETA and, for the categories
// still to come (and a running one with no rate of its own yet), their
// remaining records at their own class's rate: measured this session, else
// the rate the class last finished at (the timeline's category_done). A
// class with neither makes no guess: the figure is then the part that is
// known and the classes that are not (ETAPart: "≥12m + LONG unmeasured").
// A stalled or unknown category, a server that is down, or no category
// running give nothing: the screen shows "?".
func (k *counts) pipelineETA(cats []Category) (*float64, *ETAPart) {
	var total float64
	var unmeasured []string
	running := false
	for _, c := range cats {
		switch {
		case Final(c.State) || c.Done >= c.Target:
		case c.State == StateRunning && c.ETASeconds != nil:
			total += *c.ETASeconds
			running = true
		case c.State == StateRunning && c.Reason != "":
			return nil, nil // the server is down: nothing moves
		case c.State == StateRunning || c.State == StatePending || c.State == StatePartial || c.State == StateStopped || c.State == StateDied:
			running = running || c.State == StateRunning
			if r := k.classRate(c.Class); r > 0 {
				total += float64(c.Target-c.Done) / r * 60
			} else if !slices.Contains(unmeasured, c.Class) {
				unmeasured = append(unmeasured, c.Class)
			}
		default:
			return nil, nil // stalled, unknown
		}
	}
	switch {
	case !running:
		return nil, nil
	case len(unmeasured) > 0:
		return nil, &ETAPart{Seconds: total, Unmeasured: unmeasured}
	}
	return &total, nil
}

// eta is the time to the sample cap or the token budget, whichever is first.
func eta(v Category) *float64 {
	if v.State != StateRunning || v.RatePerMin <= 0 || v.Target <= v.Done {
		return nil
	}
	secs := float64(v.Target-v.Done) / v.RatePerMin * 60
	if v.TokenBudget > 0 && v.CompletionTokens != nil && v.TokPerSec != nil && *v.TokPerSec > 0 {
		secs = math.Min(secs, math.Max(0, float64(v.TokenBudget-*v.CompletionTokens) / *v.TokPerSec))
	}
	return &secs
}

// crossChecks are the checks users make by eye.
func (k *counts) crossChecks(s *Snapshot, now time.Time, wjson *parse.WorkerState, logLast time.Time) {
	for i := range s.Categories {
		cv := &s.Categories[i]
		c := k.cats[cv.Name]
		k.sourceChecks(s, cv, c, now, wjson, logLast)
		for _, wmsg := range cv.Warnings {
			s.Warn(WarnCategory, wmsg)
		}
	}
	if s.Worker.Source == parse.WorkerStateFile && Alive(s.Worker.State) && s.Worker.UpdatedAt != nil && now.Sub(*s.Worker.UpdatedAt) > 30*time.Second {
		s.Warn(WarnWorkerJSONStale, fmt.Sprintf("worker.json is %s old while pid %d is alive", now.Sub(*s.Worker.UpdatedAt).Round(time.Second), s.Worker.PID))
	}
}
