package snapshot

import (
	"fmt"
	"strings"
	"time"
)

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
