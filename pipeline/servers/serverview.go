package servers

import (
	"fmt"
	"math"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// serverView judges one server from its probe and log: a fold step, as
// it keeps the /metrics sample and the log's tallies for the next poll.
func (sv *Set) serverView(s *srvWatch, met parse.ServerMetrics, metErr error, now time.Time, waiting bool) snapshot.Server {
	v := snapshot.Server{URL: s.spec.URL, URLFrom: s.spec.From, Name: s.name, Role: s.role, State: snapshot.ServerUnknown, Retractions: s.st.retractions, LastCrash: s.st.crash}
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
		v.GenThroughput, v.GenThroughputNote = metricsGen(met, gen, havePrev, logLive, logFig.GenThroughput)
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
		if logStale {
			s.lastBatch(&v, logFig, a)
		}
	}
	return sv.judgeServer(s, v, now, waiting)
}

// metricsGen is the generated tokens/s of a server whose /metrics
// answered, from the first witness that holds: the counter's delta, the
// gauge while requests run, live log figures, then what one sample gives.
func metricsGen(met parse.ServerMetrics, gen *float64, havePrev, logLive bool, logGen float64) (float64, string) {
	running := met.RunningReqs.V > 0
	switch {
	case gen != nil && *gen > 0:
		return *gen, ""
	case met.GenThroughput.OK && met.GenThroughput.V > 0 && running:
		// SGLang counts generated tokens when a request finishes: long
		// requests leave the counter still while they generate. The
		// gauge is the scheduler's last decode figure.
		return met.GenThroughput.V, ""
	case logLive:
		return logGen, "" // no previous sample, or the counters were reset
	case gen != nil:
		return *gen, ""
	case !havePrev && met.GenThroughput.OK && running:
		return met.GenThroughput.V, "" // an idle server's gauge is its last batch's, not now's
	case !havePrev && running:
		return oneSampleGen(met)
	}
	return 0, ""
}

// lastBatch moves stale log figures out of the current ones: an idle
// server (no periodic line for a few of its own intervals) runs nothing
// now, and what its last batch line said is shown as that, with its time
// and age ("idle · last batch 14:02: 930 tok/s"), never as current. When
// the newest lines made no token (vLLM's one all-zero line before it goes
// quiet), the last line that did is the last batch.
func (s *srvWatch) lastBatch(v *snapshot.Server, fig snapshot.Server, age float64) {
	lb := &snapshot.LastBatch{GenThroughput: fig.GenThroughput, RunningReqs: fig.RunningReqs, QueueReqs: fig.QueueReqs, TokenUsage: fig.TokenUsage, AgeSeconds: age}
	if !s.st.newestAt.IsZero() {
		t := s.st.newestAt
		lb.At = &t
	}
	if fig.GenThroughput == 0 && s.st.lastWork.gen > 0 {
		w := s.st.lastWork
		t := w.at
		lb.At, lb.GenThroughput, lb.RunningReqs, lb.QueueReqs, lb.TokenUsage = &t, w.gen, w.running, w.queue, w.usage
		if !s.st.logMtime.IsZero() && !t.IsZero() {
			lb.AgeSeconds = max(age, s.st.logMtime.Sub(t).Seconds())
		}
	}
	v.LastBatch = lb
	v.RunningReqs, v.QueueReqs, v.GenThroughput, v.TokenUsage = 0, 0, 0, 0
}

// judgeServer sets the state and its reason from this poll's witnesses.
func (sv *Set) judgeServer(s *srvWatch, v snapshot.Server, now time.Time, waiting bool) snapshot.Server {
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
	if v.State == snapshot.ServerDown || v.State == snapshot.ServerCrashed || v.State == snapshot.ServerStopped {
		// a dead server serves nothing: its last log line's figures are history
		v.Source, v.RunningReqs, v.QueueReqs, v.GenThroughput, v.TokenUsage, v.CacheHitRate = "", 0, 0, 0, 0, nil
		v.FiguresAgeSeconds, v.FiguresStale, v.LastBatch = nil, false, nil
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
func (s *srvWatch) logFigures(now time.Time) (v snapshot.Server, age time.Duration, stale, ok bool) {
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
	for k, d := range s.st.decode {
		if first || d.logged.After(newest) { // vLLM's year-less times sort before the zero time
			newest, first = d.logged, false
		}
		if ageOf(d) <= s.staleAfter(k, d) {
			live = true
		}
	}
	for _, d := range s.perDP(newest, live, ageOf) {
		v.RunningReqs += d.running
		v.QueueReqs += d.queue + d.pd
		v.GenThroughput += d.gen
		v.TokenUsage = math.Max(v.TokenUsage, d.usage)
	}
	for _, d := range s.st.decode {
		if d.logged.Equal(newest) {
			age, s.st.newestAt = ageOf(d), d.at
		}
	}
	return v, age, !live, true
}

// perDP merges the lines that count (the live ones, else those near the
// newest) into one per DP rank: its PP stages and phases by their highest
// figures; a vLLM's engines give way to its aggregated line.
func (s *srvWatch) perDP(newest time.Time, live bool, ageOf func(decodeSample) time.Duration) map[int]decodeSample {
	aggregated := false
	for k, d := range s.st.decode {
		if k.dp == aggregatedKey && newest.Sub(d.logged) <= 15*time.Second {
			aggregated = true
		}
	}
	perDP := map[int]decodeSample{}
	for k, d := range s.st.decode {
		if live && ageOf(d) > s.staleAfter(k, d) || !live && newest.Sub(d.logged) > 15*time.Second {
			continue // SGLang logs no batch line when idle: an old one is not live
		}
		if aggregated && k.dp >= engineKeyBase {
			continue // vLLM's aggregated line already sums its engines
		}
		d.running += d.prefilling
		cur, seen := perDP[k.dp]
		if !seen {
			perDP[k.dp] = d
			continue
		}
		cur.running, cur.queue, cur.pd = max(cur.running, d.running), max(cur.queue, d.queue), max(cur.pd, d.pd)
		cur.gen, cur.usage = math.Max(cur.gen, d.gen), math.Max(cur.usage, d.usage)
		perDP[k.dp] = cur
	}
	return perDP
}

// staleAfter: a periodic line is stale after a few of its own intervals.
// While its rank's interval is unknown (one line seen), or a request
// completed well after the line (idleAfter later: it ran without a line of
// its own, as a short request that never reaches SGLang's 40th decode step
// may), not before 30 s (vLLM prints every 10 s). With only health checks
// arriving (and the last requests' completions right after the line), a
// few intervals are evidence enough of idleness, but not less than
// idleAfter. A prefill line that takes in new requests (one chunk of a
// long prompt) is work in hand until prefillAfter, the next chunk may be
// that far, but only while nothing since says its requests moved on: a
// decode line of its rank after it (they are decoding, and that line's
// own intervals decide: a server idle after its last decode line is idle,
// whatever prefill line came before it), or a request's completion after
// it (a prefill-only server answers each request once it is prefilled;
// a long prompt still being chunked has not been answered).
func (s *srvWatch) staleAfter(k rankKey, d decodeSample) time.Duration {
	floor := 30 * time.Second
	if d.interval > 0 && s.st.workAt.Sub(d.logged) <= idleAfter {
		floor = idleAfter
	}
	if d.prefilling > 0 && !s.decodedSince(k, d.logged) && !d.answered {
		floor = prefillAfter
	}
	return max(3*d.interval, floor)
}

// decodedSince: the DP rank of k (any PP stage) logged a decode line at
// or after t.
func (s *srvWatch) decodedSince(k rankKey, t time.Time) bool {
	for dk, dd := range s.st.decode {
		if dk.dp == k.dp && dk.phase == parse.Decode && !dd.logged.Before(t) {
			return true
		}
	}
	return false
}

const (
	idleAfter    = 5 * time.Second
	prefillAfter = 90 * time.Second
)

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
	if countersWentDown(met, prev) {
		return nil, nil, true
	}
	if d, ok := counterDelta(met.GenTokens, prev.GenTokens); ok {
		g := d / dt
		gen = &g
		// a hang: requests running, no token counted, and no gauge (vLLM) or a zero one
		if d == 0 && met.RunningReqs.V > 0 && (!met.GenThroughput.OK || met.GenThroughput.V == 0) {
			s.st.metStill++
		} else {
			s.st.metStill = 0
		}
	}
	return gen, deltaHitRate(met, prev), true
}

// counterDelta is a counter's growth since old; false when either is missing or
// it went down.
func counterDelta(cur, old parse.Opt[float64]) (float64, bool) {
	if !cur.OK || !old.OK || cur.V < old.V {
		return 0, false
	}
	return cur.V - old.V, true
}

// countersWentDown: a counter is lower than at the previous sample, so the
// server restarted in between.
func countersWentDown(met, prev parse.ServerMetrics) bool {
	for _, c := range [][2]parse.Opt[float64]{{met.GenTokens, prev.GenTokens}, {met.PromptTokens, prev.PromptTokens},
		{met.CachedTokens, prev.CachedTokens}, {met.PrefixQueries, prev.PrefixQueries}, {met.PrefixHits, prev.PrefixHits}} {
		if c[0].OK && c[1].OK && c[0].V < c[1].V {
			return true
		}
	}
	return false
}

// deltaHitRate is the cache hit rate between two samples: cached over
// prompt tokens (SGLang), else prefix-cache hits over queries (vLLM).
func deltaHitRate(met, prev parse.ServerMetrics) *float64 {
	if dc, ok := counterDelta(met.CachedTokens, prev.CachedTokens); ok {
		if dp, ok := counterDelta(met.PromptTokens, prev.PromptTokens); ok && dp > 0 {
			h := math.Min(1, dc/dp)
			return &h
		}
	} else if dh, ok := counterDelta(met.PrefixHits, prev.PrefixHits); ok {
		if dq, ok := counterDelta(met.PrefixQueries, prev.PrefixQueries); ok && dq > 0 {
			h := math.Min(1, dh/dq)
			return &h
		}
	}
	return nil
}

// oneSampleGen is a busy vLLM's generation rate from one /metrics sample
// (a one-shot status; vLLM has no throughput gauge and its token counter
// needs two): each running request makes a token per inter-token
// latency, so running ÷ the mean ITL (the histogram's sum over its count,
// the server's lifetime). Without the histogram it says so instead of 0.
func oneSampleGen(met parse.ServerMetrics) (float64, string) {
	h := met.Latency[parse.LatITL]
	if h.Count() > 0 && h.Sum > 0 {
		return met.RunningReqs.V * h.Count() / h.Sum, "estimate from one sample: running ÷ mean inter-token latency"
	}
	return 0, "needs two samples"
}
