package parse

import (
	"strings"
	"testing"
)

const sglangMetrics = `# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.128902e+06
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.557572e+06
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{model_name="m",cache_source="device"} 2.0e+06
sglang:cached_tokens_total{model_name="m",cache_source="host"} 32225.5
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m",dp_rank="0"} 0.28
sglang:token_usage{model_name="m",dp_rank="1"} 0.91
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="m"} 0.007507552643049313
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",dp_rank="0"} 162.0
sglang:num_running_reqs{model_name="m",dp_rank="1"} 10.0
# TYPE sglang:num_used_tokens gauge
sglang:num_used_tokens{model_name="m"} 123859.0
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{model_name="m",dp_rank="0"} 86.50814177726902
sglang:gen_throughput{model_name="m",dp_rank="1"} 13.5
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 2826.0
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 1.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 2.0
sglang:time_to_first_token_seconds_sum{model_name="m"} 0.5
sglang:time_to_first_token_seconds_count{model_name="m"} 2.0
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 100.0
`

func TestParseMetricsSGLang(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(sglangMetrics))
	if err != nil {
		t.Fatal(err)
	}
	if m.Dialect != DialectSGLang {
		t.Errorf("dialect %v", m.Dialect)
	}
	if m.RunningReqs.V != 172 || m.QueueReqs.V != 2826 || m.TokenUsage.V != 0.91 {
		t.Errorf("running %v queue %v usage %v", m.RunningReqs, m.QueueReqs, m.TokenUsage)
	}
	if g := m.GenThroughput.V; g < 100.008 || g > 100.009 {
		t.Errorf("gen throughput %v (want the DP sum)", g)
	}
	if m.PromptTokens.V != 8128902 || m.GenTokens.V != 7557572 || m.CachedTokens.V != 2032225.5 || m.CacheHitRate.V != 0.25 {
		t.Errorf("counters %+v", m)
	}
	if _, ok := m.Values["python_gc_objects_collected_total"]; ok {
		t.Error("non-server metric kept")
	}
	if _, ok := m.Values["sglang:time_to_first_token_seconds"]; ok {
		t.Error("histogram kept as a value")
	}
}

func TestParseMetricsVLLM(t *testing.T) {
	text := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 64.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 3.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.42
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 200.0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 50.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 1000.0
`
	m, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m.Dialect != DialectVLLM || m.RunningReqs.V != 64 || m.QueueReqs.V != 3 || m.TokenUsage.V != 0.42 || m.CacheHitRate.V != 0.25 || m.GenTokens.V != 1000 {
		t.Errorf("%+v", m)
	}
}

func TestParseMetricsError(t *testing.T) {
	if _, err := ParseMetrics(strings.NewReader("sglang:x{ broken\n")); err == nil {
		t.Error("no error for broken text")
	}
}
