package pipeline

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// LatencyWindow is how far back the latency percentiles and the
// speculative acceptance reach: sgtop's rolling 5 minutes.
const LatencyWindow = 5 * time.Minute

// Latency is the request latencies over the rolling window, from the
// histograms' bucket deltas between polls, added over the host's servers
// and their engines (vllm-htop's merged-bucket percentiles). A kind with no
// request finished in the window is null.
type Latency struct {
	// Scope is "window", or "lifetime" when no two reads of /metrics span
	// the window yet (a one-shot status): the server's figures since it
	// started, as its histograms hold them.
	Scope         string  `json:"scope"`
	WindowSeconds float64 `json:"window_s"`
	// AgeSeconds is the age of the newest poll in the window: 0 when this
	// poll read /metrics, more when the figures are from before.
	AgeSeconds float64      `json:"age_s"`
	TTFT       *Percentiles `json:"ttft"`
	ITL        *Percentiles `json:"itl"`
	E2E        *Percentiles `json:"e2e"`
	Queue      *Percentiles `json:"queue"`
}

// Percentiles are seconds; Count is the observations in the window.
type Percentiles struct {
	P50   float64 `json:"p50_s"`
	P90   float64 `json:"p90_s"`
	P99   float64 `json:"p99_s"`
	Count float64 `json:"count"`
}

// SpecDecode is speculative decoding's acceptance. SGLang: its gauges
// (the last interval's mean accepted length and rate); vLLM: its counters'
// deltas over the window (rate = accepted / drafted tokens, length = 1 +
// accepted / drafts).
type SpecDecode struct {
	AcceptLength *float64 `json:"accept_length"`
	AcceptRate   *float64 `json:"accept_rate"`
	Scope        string   `json:"scope,omitempty"` // "lifetime": from the counters of a first read
}

// latStep is the gain of a server's histograms and spec counters over the
// polls of one span (latStepSpan).
type latStep struct {
	from, at                  time.Time // the first and last poll it holds
	hist                      map[string]parse.Histogram
	accepted, drafted, drafts float64
}

// latWindow is one server's histograms as last read and its steps within
// the window.
type latWindow struct {
	last      map[string]parse.Histogram
	lastSpec  [3]parse.Opt[float64]
	steps     []latStep
	lastAt    time.Time // the last poll that read its /metrics
	reads     int       // polls that read it
	specGauge *SpecDecode
}

// note folds one /metrics read of a server into its window.
func (lw *latWindow) note(met parse.ServerMetrics, now time.Time) {
	st := latStep{at: now, hist: map[string]parse.Histogram{}}
	for k, h := range met.Latency {
		d, _ := h.Since(lw.last[k]) // a restart: what it holds is new since
		if lw.lastAt.IsZero() {
			d = parse.Histogram{} // the first read: the server's lifetime is not this window
		}
		st.hist[k] = d
	}
	lw.last = met.Latency
	cur := [3]parse.Opt[float64]{met.SpecAccepted, met.SpecDraftTokens, met.SpecDrafts}
	if !lw.lastAt.IsZero() {
		gain := func(i int) float64 {
			c, o := cur[i], lw.lastSpec[i]
			switch {
			case !c.OK:
				return 0
			case !o.OK || c.V < o.V:
				return c.V // new, or a restart
			}
			return c.V - o.V
		}
		st.accepted, st.drafted, st.drafts = gain(0), gain(1), gain(2)
	}
	lw.lastSpec, lw.lastAt = cur, now
	lw.reads++
	if n := len(lw.steps); n > 0 && now.Sub(lw.steps[n-1].from) < latStepSpan {
		lw.steps[n-1].merge(st)
	} else {
		st.from = now
		lw.steps = append(lw.steps, st)
	}
	lw.specGauge = nil
	if met.SpecAcceptLength.OK && met.SpecAcceptLength.V > 0 {
		l, r := met.SpecAcceptLength.V, met.SpecAcceptRate.V
		lw.specGauge = &SpecDecode{AcceptLength: &l}
		if met.SpecAcceptRate.OK {
			lw.specGauge.AcceptRate = &r
		}
	}
}

// latStepSpan: polls closer than this make one step, so a window holds
// at most LatencyWindow/latStepSpan steps whatever the poll interval (a
// soak polling every 100 ms kept 3,000 steps of histograms, and its memory
// grew for the window's whole 5 minutes). A step leaves the window when
// its last poll does: the window may reach back a span further.
const latStepSpan = 10 * time.Second

// merge adds o, a later step, to s.
func (s *latStep) merge(o latStep) {
	for k, h := range o.hist {
		s.hist[k] = parse.MergeHistograms(s.hist[k], h)
	}
	s.accepted, s.drafted, s.drafts = s.accepted+o.accepted, s.drafted+o.drafted, s.drafts+o.drafts
	s.at = o.at
}

// trim drops the steps older than the window.
func (lw *latWindow) trim(now time.Time) {
	i := 0
	for i < len(lw.steps) && now.Sub(lw.steps[i].at) > LatencyWindow {
		i++
	}
	lw.steps = lw.steps[i:]
}

// addCounted adds to byKind the histograms of hists that counted any
// request.
func addCounted(byKind map[string][]parse.Histogram, hists map[string]parse.Histogram) {
	for k, h := range hists {
		if h.Count() > 0 {
			byKind[k] = append(byKind[k], h)
		}
	}
}

// latencyOf is the percentiles of the windows together.
func latencyOf(ws []*latWindow, now time.Time) *Latency {
	byKind := map[string][]parse.Histogram{}
	var newest time.Time
	for _, lw := range ws {
		for _, st := range lw.steps {
			addCounted(byKind, st.hist)
		}
		if lw.lastAt.After(newest) {
			newest = lw.lastAt
		}
	}
	scope := "window"
	if len(byKind) == 0 {
		scope = "lifetime"
		for _, lw := range ws {
			if lw.reads > 1 {
				return nil // read twice or more: nothing finished in the window
			}
			addCounted(byKind, lw.last)
		}
	}
	if len(byKind) == 0 {
		return nil
	}
	l := &Latency{Scope: scope, WindowSeconds: LatencyWindow.Seconds(), AgeSeconds: math.Max(0, now.Sub(newest).Seconds())}
	for k, hs := range byKind {
		h := parse.MergeHistograms(hs...)
		p := &Percentiles{Count: h.Count()}
		p.P50, _ = h.Quantile(0.5)
		p.P90, _ = h.Quantile(0.9)
		p.P99, _ = h.Quantile(0.99)
		switch k {
		case parse.LatTTFT:
			l.TTFT = p
		case parse.LatITL:
			l.ITL = p
		case parse.LatE2E:
			l.E2E = p
		case parse.LatQueue:
			l.Queue = p
		}
	}
	return l
}

// specOf is the acceptance of the windows: vLLM's counters over the
// window where they moved, else the mean of SGLang's gauges.
func specOf(ws []*latWindow) *SpecDecode {
	var acc, drafted, drafts float64
	var lens, rates []float64
	for _, lw := range ws {
		for _, st := range lw.steps {
			acc, drafted, drafts = acc+st.accepted, drafted+st.drafted, drafts+st.drafts
		}
		if g := lw.specGauge; g != nil {
			lens = append(lens, *g.AcceptLength)
			if g.AcceptRate != nil {
				rates = append(rates, *g.AcceptRate)
			}
		}
	}
	out := &SpecDecode{}
	if drafts > 0 {
		l := 1 + acc/drafts
		out.AcceptLength = &l
	}
	if drafted > 0 {
		r := acc / drafted
		out.AcceptRate = &r
	}
	if out.AcceptLength == nil && len(lens) > 0 {
		out.AcceptLength = mean(lens)
		if len(rates) > 0 {
			out.AcceptRate = mean(rates)
		}
	}
	if out.AcceptLength == nil && out.AcceptRate == nil {
		return lifetimeSpec(ws)
	}
	return out
}

// lifetimeSpec is vLLM's acceptance over the server's lifetime, from its
// counters as first read: on a first poll (a one-shot status) the window
// holds no delta yet, but the counters themselves give the figures
// (accepted ÷ drafted tokens, 1 + accepted ÷ drafts).
func lifetimeSpec(ws []*latWindow) *SpecDecode {
	var acc, drafted, drafts float64
	for _, lw := range ws {
		if lw.reads > 1 {
			return nil // read twice or more: nothing drafted in the window
		}
		acc, drafted, drafts = acc+lw.lastSpec[0].V, drafted+lw.lastSpec[1].V, drafts+lw.lastSpec[2].V
	}
	out := &SpecDecode{Scope: "lifetime"}
	if drafts > 0 {
		l := 1 + acc/drafts
		out.AcceptLength = &l
	}
	if drafted > 0 {
		r := acc / drafted
		out.AcceptRate = &r
	}
	if out.AcceptLength == nil && out.AcceptRate == nil {
		return nil
	}
	return out
}

func mean(xs []float64) *float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	return &m
}

// FormatSeconds is a latency as the panel and status write it: 850µs,
// 17ms, 1.9s, 42s, 3m05s.
func FormatSeconds(s float64) string {
	switch {
	case s < 0.001:
		return fmt.Sprintf("%.0fµs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.0fms", s*1000)
	case s < 10:
		return fmt.Sprintf("%.1fs", s)
	case s < 60:
		return fmt.Sprintf("%.0fs", s)
	}
	return FormatDuration(time.Duration(s * float64(time.Second)))
}

// Text is "p50/p90/p99", or "-" without observations.
func (p *Percentiles) Text() string {
	if p == nil {
		return "-"
	}
	return FormatSeconds(p.P50) + "/" + FormatSeconds(p.P90) + "/" + FormatSeconds(p.P99)
}

// Kinds are the latency kinds with their screen names, in order.
func (l *Latency) Kinds() []struct {
	Name string
	P    *Percentiles
} {
	return []struct {
		Name string
		P    *Percentiles
	}{{"TTFT", l.TTFT}, {"ITL", l.ITL}, {"e2e", l.E2E}, {"queue", l.Queue}}
}

// Line is the latencies on one line, with where they come from:
// "latency p50/p90/p99 (5m): TTFT 400ms/600ms/1.9s  ITL …", "(since start)"
// for a lifetime figure, "as of 12s ago" when /metrics was not read
// this poll.
func (l *Latency) Line() string {
	if l == nil {
		return ""
	}
	parts := []string{"latency p50/p90/p99 (" + l.ScopeText() + "):"}
	for _, k := range l.Kinds() {
		if k.P != nil {
			parts = append(parts, k.Name+" "+k.P.Text())
		}
	}
	return strings.Join(parts, "  ")
}

// ScopeText is what the figures cover: "5m", "since start", with "as of
// 12s ago" when /metrics was not read this poll.
func (l *Latency) ScopeText() string {
	scope := FormatDuration(time.Duration(l.WindowSeconds) * time.Second)
	if l.Scope == "lifetime" {
		scope = "since start"
	}
	if l.AgeSeconds >= 1 {
		scope += ", as of " + FormatDuration(time.Duration(l.AgeSeconds)*time.Second) + " ago"
	}
	return scope
}

// Text is "accept length 3.00, rate 65%".
func (s *SpecDecode) Text() string {
	if s == nil {
		return ""
	}
	var parts []string
	if s.AcceptLength != nil {
		parts = append(parts, fmt.Sprintf("accept length %.2f", *s.AcceptLength))
	}
	if s.AcceptRate != nil {
		parts = append(parts, fmt.Sprintf("rate %.0f%%", 100**s.AcceptRate))
	}
	return "spec decode " + strings.Join(parts, ", ")
}
