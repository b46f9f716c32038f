package servers

import (
	"math"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// latencyWindow is how far back the latency percentiles and the
// speculative acceptance reach: sgtop's rolling 5 minutes.
const latencyWindow = 5 * time.Minute

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
	specGauge *snapshot.SpecDecode
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
		lw.specGauge = &snapshot.SpecDecode{AcceptLength: &l}
		if met.SpecAcceptRate.OK {
			lw.specGauge.AcceptRate = &r
		}
	}
}

// latStepSpan: polls closer than this make one step, so a window holds
// at most latencyWindow/latStepSpan steps whatever the poll interval (a
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
	for i < len(lw.steps) && now.Sub(lw.steps[i].at) > latencyWindow {
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
func latencyOf(ws []*latWindow, now time.Time) *snapshot.Latency {
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
	l := &snapshot.Latency{Scope: scope, WindowSeconds: latencyWindow.Seconds(), AgeSeconds: math.Max(0, now.Sub(newest).Seconds())}
	for k, hs := range byKind {
		h := parse.MergeHistograms(hs...)
		p := &snapshot.Percentiles{Count: h.Count()}
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
func specOf(ws []*latWindow) *snapshot.SpecDecode {
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
	out := &snapshot.SpecDecode{}
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
func lifetimeSpec(ws []*latWindow) *snapshot.SpecDecode {
	var acc, drafted, drafts float64
	for _, lw := range ws {
		if lw.reads > 1 {
			return nil // read twice or more: nothing drafted in the window
		}
		acc, drafted, drafts = acc+lw.lastSpec[0].V, drafted+lw.lastSpec[1].V, drafts+lw.lastSpec[2].V
	}
	out := &snapshot.SpecDecode{Scope: "lifetime"}
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
