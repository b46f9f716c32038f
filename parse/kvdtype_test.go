package parse

import (
	"strings"
	"testing"
)

func TestKVCacheDtypeLine(t *testing.T) {
	for line, want := range map[string]string{
		"[2025-09-28 17:07:10 TP0] Using KV cache dtype: torch.float8_e5m2":           "float8_e5m2",
		"[2026-01-02 03:04:05 DP0 TP0 EP0] Using KV cache dtype: torch.float8_e4m3fn": "float8_e4m3fn",
		"[2026-01-02 03:04:05] Using KV cache dtype: torch.bfloat16\r":                "bfloat16",
	} {
		got, ok := KVCacheDtype(line)
		if !ok || got != want {
			t.Errorf("%q: %q %v, want %q", line, got, ok, want)
		}
		if ev := ParseServerLine(line); ev.Kind != SStartup || ev.Startup.Stage != "kv_cache_dtype" {
			t.Errorf("%q: kind %v stage %q", line, ev.Kind, ev.Startup.Stage)
		}
	}
	for _, line := range []string{
		"[2025-09-28 17:07:10 TP0] KV Cache is allocated. #tokens: 10",
		"[2025-09-28 17:07:10 TP0] Using KV cache dtype: ",
		"[2025-09-28 17:07:10 TP0] Using KV cache dtype: torch.float8 (scaled)",
		"user said: Using KV cache dtype: torch.float8_e4m3fn please",
		"",
	} {
		if d, ok := KVCacheDtype(line); ok {
			t.Errorf("%q read as %q", line, d)
		}
	}
}

func TestMetricLabels(t *testing.T) {
	text := `# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="fp8",enable_prefix_caching="True",gpu_memory_utilization="0.9"} 1.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
`
	ls, err := MetricLabels(strings.NewReader(text), "vllm:cache_config_info")
	if err != nil || len(ls) != 1 || ls[0]["cache_dtype"] != "fp8" || ls[0]["block_size"] != "16" || ls[0]["gpu_memory_utilization"] != "0.9" {
		t.Fatalf("%v %v", ls, err)
	}
	if ls, err := MetricLabels(strings.NewReader(text), "vllm:nope"); err != nil || ls != nil {
		t.Errorf("missing metric: %v %v", ls, err)
	}
}
