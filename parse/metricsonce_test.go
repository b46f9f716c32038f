package parse

import (
	"math"
	"os"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// A 2026 SGLang with DP attention, every scheduler exporting and priority
// scheduling on writes each DP rank's running requests 2 (TP ranks) × 3
// (total + 2 priorities) times; summing every label set read 256 running
// where the server has 64. Both prefixes read alike.
func TestMetricsCountedOnce(t *testing.T) {
	raw, err := os.ReadFile("testdata/metrics_sglang_2026_dp2_allsched_priority.prom")
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"sglang:", "sglang_"} {
		t.Run(prefix, func(t *testing.T) {
			m, err := ParseMetrics(strings.NewReader(strings.ReplaceAll(string(raw), "sglang:", prefix)))
			if err != nil {
				t.Fatal(err)
			}
			if m.Dialect != DialectSGLang {
				t.Fatalf("dialect %v", m.Dialect)
			}
			checks := []struct {
				name      string
				got, want Opt[float64]
			}{
				{"running", m.RunningReqs, some(64.0)},
				{"queued", m.QueueReqs, some(5.0)},
				{"gen throughput", m.GenThroughput, some(1900.0)},
				{"token usage (the fuller rank)", m.TokenUsage, some(0.62)},
				{"retracted (the counter)", m.Retracted, some(20.0)},
				{"retracted last interval (the gauge)", m.RetractedLast, some(2.0)},
				{"accept length (mean of ranks)", m.SpecAcceptLength, some(3.0)},
				{"accept rate", m.SpecAcceptRate, some(0.65)},
				{"cached tokens (over cache_source)", m.CachedTokens, some(2.0e6)},
				{"hit rate", m.CacheHitRate, some(0.25)},
			}
			for _, c := range checks {
				if c.got.OK != c.want.OK || !near(c.got.V, c.want.V) {
					t.Errorf("%s: got %+v, want %v", c.name, c.got, c.want.V)
				}
			}
			if len(m.Ranks) != 2 || m.Ranks[0].Rank != "dp0" || m.Ranks[0].RunningReqs.V != 40 || m.Ranks[1].RunningReqs.V != 24 ||
				m.Ranks[0].GenThroughput.V != 1500 || m.Ranks[1].GenThroughput.V != 400 || m.Ranks[0].QueueReqs.V != 5 {
				t.Errorf("ranks %+v", m.Ranks)
			}
			q := m.Latency[LatQueue]
			if q.Count() != 100 { // 50 requests per DP rank, each seen by its 2 TP ranks
				t.Errorf("queue-time observations %v, want 100", q.Count())
			}
			for _, c := range []struct {
				kind    string
				q, want float64
			}{{LatTTFT, 0.5, 0.4}, {LatTTFT, 0.9, 0.6}, {LatTTFT, 0.99, 1.9}, {LatQueue, 0.5, 0.05 + 0.05*50/60}, {LatQueue, 0.9, 0.2}, {LatQueue, 0.99, 0.47},
				{LatITL, 0.5, 0.015 + 0.005*5000/9000}, {LatE2E, 0.5, 10 + 10*50/60.0}} {
				got, ok := m.Latency[c.kind].Quantile(c.q)
				if !ok || !near(got, c.want) {
					t.Errorf("%s p%v = %v (ok %v), want %v", c.kind, 100*c.q, got, ok, c.want)
				}
			}
		})
	}
}

// A breakdown without its total (an exporter that keeps only the
// per-priority series) is the whole; series that differ in anything but
// the rank labels are added.
func TestMetricsBreakdownWithoutTotal(t *testing.T) {
	text := `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",priority="0"} 3
sglang:num_running_reqs{model_name="m",priority="1"} 4
# TYPE vllm_x gauge
vllm_x 1
`
	m, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m.RunningReqs.V != 7 {
		t.Errorf("running %v, want 7", m.RunningReqs)
	}
}

// vLLM with two DP engines: engines are added, and each is a rank; its
// spec-decode counters and cache dtype are read.
func TestMetricsVLLMEngines(t *testing.T) {
	// names: vllm/v1/metrics/loggers.py (PrometheusStatLogger, one series per
	// engine label), vllm/v1/spec_decode/metrics.py @ 016a8587 (SpecDecodingProm).
	text := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 30
vllm:num_requests_running{engine="1",model_name="m"} 2
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 0
vllm:num_requests_waiting{engine="1",model_name="m"} 9
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 5000
vllm:generation_tokens_total{engine="1",model_name="m"} 700
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 300
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 210
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="fp8_e4m3",engine="0"} 1
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.01"} 0
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.025"} 10
vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf"} 10
vllm:time_per_output_token_seconds_sum{engine="0"} 0.2
vllm:time_per_output_token_seconds_count{engine="0"} 10
vllm:time_per_output_token_seconds_bucket{engine="1",le="0.01"} 0
vllm:time_per_output_token_seconds_bucket{engine="1",le="0.025"} 0
vllm:time_per_output_token_seconds_bucket{engine="1",le="+Inf"} 10
vllm:time_per_output_token_seconds_sum{engine="1"} 0.2
vllm:time_per_output_token_seconds_count{engine="1"} 10
`
	m, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m.Dialect != DialectVLLM || m.RunningReqs.V != 32 || m.QueueReqs.V != 9 || m.GenTokens.V != 5700 {
		t.Errorf("%+v", m)
	}
	if len(m.Ranks) != 2 || m.Ranks[1].Rank != "engine 1" || m.Ranks[1].QueueReqs.V != 9 || m.Ranks[1].GenTokens.V != 700 {
		t.Errorf("ranks %+v", m.Ranks)
	}
	if m.SpecAccepted.V != 210 || m.SpecDraftTokens.V != 300 || m.SpecDrafts.V != 100 || m.KVCacheDType != "fp8_e4m3" {
		t.Errorf("spec %v/%v/%v dtype %q", m.SpecAccepted, m.SpecDraftTokens, m.SpecDrafts, m.KVCacheDType)
	}
	itl := m.Latency[LatITL] // the older name, engines merged
	if itl.Count() != 20 {
		t.Fatalf("itl %+v", itl)
	}
	if p50, _ := itl.Quantile(0.5); !near(p50, 0.025) {
		t.Errorf("p50 %v", p50)
	}
	if p99, _ := itl.Quantile(0.99); !near(p99, 0.025) { // in +Inf: the highest finite bound
		t.Errorf("p99 %v", p99)
	}
}
