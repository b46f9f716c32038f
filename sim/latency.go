package sim

import (
	"fmt"
	"strings"
	"time"
)

// The request latencies the sim observes and /metrics exports as
// histograms, where and how the servers observe them, in the sim's own
// seconds (wall time × Speed, as its throughput figures are):
//   - SGLang, python/sglang/srt/observability/metrics_collector.py (copies
//     @ 016d8605, 44cedc2b): the scheduler's sglang:queue_time_seconds when a
//     request leaves the waiting queue; the tokenizer's
//     sglang:time_to_first_token_seconds at the first output,
//     sglang:inter_token_latency_seconds at each later output (the
//     interval over its new tokens, counted once per token:
//     observe_inter_token_latency), sglang:e2e_request_latency_seconds when
//     a request finishes (observe_one_finished_request); default buckets.
//   - vLLM, vllm/v1/metrics/loggers.py (PrometheusStatLogger):
//     vllm:request_queue_time_seconds, vllm:time_to_first_token_seconds,
//     vllm:inter_token_latency_seconds, vllm:e2e_request_latency_seconds;
//     its buckets (request_latency_buckets for e2e and queue).
type latHists struct {
	queue, ttft, itl, e2e hist
}

type hist struct {
	bounds []float64
	counts []float64 // per bucket, not cumulative; the last is +Inf
	sum    float64
}

var (
	sglangTTFT  = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	sglangITL   = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1, 2, 4, 6, 8}
	sglangE2E   = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400}
	sglangQueue = []float64{0, 0.001, 0.005, 0.010, 0.050, 0.100, 0.200, 0.500, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400}
	vllmTTFT    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	vllmITL     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	vllmRequest = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// observe adds n observations of v (seconds).
func (h *hist) observe(v float64, n int) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i] += float64(n)
	h.sum += v * float64(n)
}

func newHist(bounds []float64) hist {
	return hist{bounds: bounds, counts: make([]float64, len(bounds)+1)}
}

// latency is the server's histograms, made on first use for its flavour;
// s.mu must be held.
func (s *Server) latency() *latHists {
	if s.lat == nil {
		if s.vllm() {
			s.lat = &latHists{queue: newHist(vllmRequest), ttft: newHist(vllmTTFT), itl: newHist(vllmITL), e2e: newHist(vllmRequest)}
		} else {
			s.lat = &latHists{queue: newHist(sglangQueue), ttft: newHist(sglangTTFT), itl: newHist(sglangITL), e2e: newHist(sglangE2E)}
		}
	}
	return s.lat
}

// reqClock times one request for the histograms.
type reqClock struct {
	s          *Server
	start, out time.Time
}

func (s *Server) startClock() *reqClock { return &reqClock{s: s, start: time.Now()} }

// secs is d in the sim's seconds.
func (c *reqClock) secs(d time.Duration) float64 { return d.Seconds() * c.s.opts.Speed }

func (c *reqClock) record(f func(l *latHists)) {
	c.s.mu.Lock()
	f(c.s.latency())
	c.s.mu.Unlock()
}

// admitted: the request left the waiting queue.
func (c *reqClock) admitted() {
	q := c.secs(time.Since(c.start))
	c.record(func(l *latHists) { l.queue.observe(q, 1) })
}

// output: the request produced its nth output of ntok tokens.
func (c *reqClock) output(nth, ntok int) {
	now := time.Now()
	if nth == 1 {
		v := c.secs(now.Sub(c.start))
		c.record(func(l *latHists) { l.ttft.observe(v, 1) })
	} else if ntok > 0 {
		v := c.secs(now.Sub(c.out)) / float64(ntok)
		c.record(func(l *latHists) { l.itl.observe(v, ntok) })
	}
	c.out = now
}

// finished: the request ended with its whole answer.
func (c *reqClock) finished() {
	v := c.secs(time.Since(c.start))
	c.record(func(l *latHists) { l.e2e.observe(v, 1) })
}

// writeLatency writes the histograms in the exposition format; s.mu held.
func (s *Server) writeLatency(b *strings.Builder, prefix, lbl string) {
	l := s.latency()
	queue := "queue_time_seconds"
	if s.vllm() {
		queue = "request_queue_time_seconds"
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(lbl, "{"), "}")
	for _, h := range []struct {
		name, help string
		h          *hist
	}{
		{"time_to_first_token_seconds", "Histogram of time to first token in seconds.", &l.ttft},
		{"inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", &l.itl},
		{"e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", &l.e2e},
		{queue, "Histogram of queueing time in seconds.", &l.queue},
	} {
		n := prefix + h.name
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s histogram\n", n, h.help, n)
		cum := 0.0
		for i, c := range h.h.counts {
			cum += c
			le := "+Inf"
			if i < len(h.h.bounds) {
				le = fmt.Sprint(h.h.bounds[i])
			}
			fmt.Fprintf(b, "%s_bucket{%s,le=%q} %g\n", n, inner, le, cum)
		}
		fmt.Fprintf(b, "%s_sum%s %g\n%s_count%s %g\n", n, lbl, h.h.sum, n, lbl, cum)
	}
}
