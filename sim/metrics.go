package sim

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// metrics serves Prometheus text: SGLang's sglang:* series
// (python/sglang/srt/observability/metrics_collector.py) or vLLM's vllm:*
// series (vllm/v1/metrics/loggers.py, PrometheusStatLogger).
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	text := s.MetricsText()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	if gzipAccepted(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		z := gzip.NewWriter(w)
		_, _ = io.WriteString(z, text)
		_ = z.Close()
		return
	}
	_, _ = io.WriteString(w, text)
}

// MetricsText is what /metrics serves, whether it is served or not
// (NoMetrics): a benchmark measures the server by its counters while the
// client under test sees only the log.
func (s *Server) MetricsText() string {
	s.mu.Lock()
	running, queued, used, c, lastRetract := s.running, s.queued, s.used, s.counts, s.lastRetract
	maxTotal := s.opts.MaxTotal // Resize changes it
	gen := s.genThroughput()
	s.mu.Unlock()
	var b strings.Builder
	prefix, lbl := "sglang:", fmt.Sprintf(`{model_name=%q}`, s.opts.Model)
	if s.vllm() {
		prefix, lbl = "vllm:", fmt.Sprintf(`{engine="0",model_name=%q}`, s.opts.Model)
	}
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %[1]s%[2]s %[3]s\n# TYPE %[1]s%[2]s gauge\n%[1]s%[2]s%[4]s %[5]g\n", prefix, name, help, lbl, v)
	}
	counter := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %[1]s%[2]s_total %[3]s\n# TYPE %[1]s%[2]s_total counter\n%[1]s%[2]s_total%[4]s %[5]g\n", prefix, name, help, lbl, v)
	}
	usage := float64(used) / float64(maxTotal)
	if s.vllm() {
		s.cacheConfigInfo(&b)
		gauge("num_requests_running", "Number of requests in model execution batches.", float64(running))
		gauge("num_requests_waiting", "Number of requests waiting to be processed.", float64(queued))
		gauge("kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", usage)
		counter("prompt_tokens", "Number of prefill tokens processed.", c.prompt)
		counter("generation_tokens", "Number of generation tokens processed.", c.gen)
		fmt.Fprintf(&b, "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE vllm:request_success_total counter\n"+
			"vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=%q} %g\n", s.opts.Model, c.requests)
	} else {
		gauge("num_running_reqs", "The number of running requests.", float64(running))
		gauge("num_used_tokens", "The number of used tokens.", float64(used))
		gauge("token_usage", "The token usage.", usage)
		gauge("gen_throughput", "The generation throughput (token/s).", gen)
		gauge("num_queue_reqs", "The number of requests in the waiting queue.", float64(queued))
		gauge("cache_hit_rate", "The prefix cache hit rate.", 0)
		gauge("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", float64(maxTotal))
		counter("prompt_tokens", "Number of prefill tokens processed.", c.prompt)
		counter("generation_tokens", "Number of generation tokens processed.", c.gen)
		counter("num_requests", "Number of requests processed.", c.requests)
		counter("num_aborted_requests", "Number of requests aborted.", c.aborted)
		// metrics_collector.py: the old gauge (the last retraction's count)
		// and the counter beside it
		gauge("num_retracted_reqs", "The number of retracted requests.", float64(lastRetract))
		counter("num_retracted_requests", "Total number of retracted requests.", c.retracted)
	}
	s.mu.Lock()
	s.writeLatency(&b, prefix, lbl)
	s.mu.Unlock()
	return b.String()
}

// gzipAccepted is prometheus_client's gzip_accepted (exposition.py): both
// servers mount its make_asgi_app at /metrics, which compresses by default
// (disable_compression=False) when the request accepts gzip.
func gzipAccepted(header string) bool {
	for _, enc := range strings.Split(header, ",") {
		if e, _, _ := strings.Cut(enc, ";"); strings.EqualFold(strings.TrimSpace(e), "gzip") {
			return true
		}
	}
	return false
}

// cacheConfigInfo is vLLM's info gauge: PrometheusStatLogger.log_metrics_info
// ("cache_config", CacheConfig.metrics_info()) sets a gauge with the config
// fields as string labels, plus engine, to 1.
func (s *Server) cacheConfigInfo(b *strings.Builder) {
	blocks := s.opts.MaxTotal / 16
	fmt.Fprintf(b, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n"+
		"vllm:cache_config_info{block_size=\"16\",cache_dtype=%q,calculate_kv_scales=\"False\",cpu_offload_gb=\"0\","+
		"enable_prefix_caching=\"True\",engine=\"0\",gpu_memory_utilization=\"0.9\",is_attention_free=\"False\","+
		"num_cpu_blocks=\"None\",num_gpu_blocks=\"%d\",prefix_caching_hash_algo=\"sha256\",sliding_window=\"None\",swap_space=\"4\"} 1.0\n",
		s.opts.KVCacheDType, blocks)
}
