package parse

import (
	"fmt"
	"io"
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ServerMetrics is what the dashboard shows from a server's /metrics. Values
// of several label sets (one per DP rank or engine) are summed, except usage
// and hit rate, which take the highest rank: a full rank is what matters.
// Every field is a fraction or a plain count; none is a percent.
type ServerMetrics struct {
	Dialect Dialect
	// GenThroughput is SGLang's sglang:gen_throughput gauge (token/s): the
	// figure of the last decode log line, not a rate over the poll. vLLM has
	// none. A watcher computes the rate from GenTokens between two polls.
	GenThroughput Opt[float64]
	RunningReqs   Opt[float64]
	QueueReqs     Opt[float64]
	TokenUsage    Opt[float64] // 0–1
	// CacheHitRate is the lifetime ratio of the counters, CachedTokens /
	// PromptTokens (SGLang) or PrefixHits / PrefixQueries (vLLM), 0–1. The
	// sglang:cache_hit_rate gauge is not used: SGLang resets it to 0 at every
	// decode log line. A watcher computes the recent rate from the deltas.
	CacheHitRate    Opt[float64]
	UsedTokens      Opt[float64]
	MaxTotalTokens  Opt[float64]
	PromptTokens    Opt[float64] // counter: sglang:prompt_tokens_total, vllm:prompt_tokens_total
	GenTokens       Opt[float64] // counter: sglang:generation_tokens_total, vllm:generation_tokens_total
	CachedTokens    Opt[float64] // counter: sglang:cached_tokens_total (summed over cache_source)
	PrefixQueries   Opt[float64] // counter: vllm:prefix_cache_queries_total (older vllm:gpu_prefix_cache_queries_total), in tokens
	PrefixHits      Opt[float64] // counter: vllm:prefix_cache_hits_total (older vllm:gpu_prefix_cache_hits_total), in tokens
	Requests        Opt[float64] // counter
	AbortedRequests Opt[float64] // counter
	Retracted       Opt[float64]
	Preemptions     Opt[float64] // counter (vLLM)
	// Values holds every sglang:* and vllm:* gauge and counter, summed over
	// label sets, by name as exposed (counters keep their _total suffix).
	Values map[string]float64
}

// ParseMetrics reads the Prometheus text format with expfmt.
func ParseMetrics(r io.Reader) (ServerMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return ServerMetrics{}, fmt.Errorf("parse metrics: %w", err)
	}
	m := ServerMetrics{Values: map[string]float64{}}
	maxOf := map[string]float64{}
	for name, fam := range fams {
		if !strings.HasPrefix(name, "sglang:") && !strings.HasPrefix(name, "vllm:") {
			continue
		}
		for _, mt := range fam.GetMetric() {
			v, ok := value(fam.GetType(), mt)
			if !ok {
				continue
			}
			m.Values[name] += v
			if cur, seen := maxOf[name]; !seen || v > cur {
				maxOf[name] = v
			}
		}
	}
	sum := func(names ...string) Opt[float64] {
		for _, n := range names {
			if v, ok := m.Values[n]; ok {
				return some(v)
			}
		}
		return Opt[float64]{}
	}
	highest := func(names ...string) Opt[float64] {
		for _, n := range names {
			if v, ok := maxOf[n]; ok {
				return some(v)
			}
		}
		return Opt[float64]{}
	}
	if _, ok := m.Values["sglang:num_running_reqs"]; ok {
		m.Dialect = DialectSGLang
	} else if _, ok := m.Values["vllm:num_requests_running"]; ok {
		m.Dialect = DialectVLLM
	}
	m.GenThroughput = sum("sglang:gen_throughput")
	m.RunningReqs = sum("sglang:num_running_reqs", "vllm:num_requests_running")
	m.QueueReqs = sum("sglang:num_queue_reqs", "vllm:num_requests_waiting")
	m.TokenUsage = highest("sglang:token_usage", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
	for _, pool := range []string{"sglang:swa_token_usage", "sglang:mamba_usage"} { // hybrid models: the fullest pool
		if u := highest(pool); u.OK && (!m.TokenUsage.OK || u.V > m.TokenUsage.V) {
			m.TokenUsage = u
		}
	}
	m.UsedTokens = sum("sglang:num_used_tokens")
	m.MaxTotalTokens = sum("sglang:max_total_num_tokens")
	m.PromptTokens = sum("sglang:prompt_tokens_total", "vllm:prompt_tokens_total")
	m.GenTokens = sum("sglang:generation_tokens_total", "vllm:generation_tokens_total")
	m.Requests = sum("sglang:num_requests_total", "vllm:request_success_total")
	m.AbortedRequests = sum("sglang:num_aborted_requests_total")
	m.Retracted = sum("sglang:num_retracted_reqs", "sglang:num_retracted_requests_total")
	m.Preemptions = sum("vllm:num_preemptions_total", "vllm:num_preemptions")
	m.CachedTokens = sum("sglang:cached_tokens_total")
	m.PrefixQueries = sum("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total", "vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries")
	m.PrefixHits = sum("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total", "vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits")
	switch {
	case m.CachedTokens.OK && m.PromptTokens.OK && m.PromptTokens.V > 0:
		m.CacheHitRate = some(m.CachedTokens.V / m.PromptTokens.V)
	case m.PrefixQueries.OK && m.PrefixHits.OK && m.PrefixQueries.V > 0:
		m.CacheHitRate = some(m.PrefixHits.V / m.PrefixQueries.V)
	}
	return m, nil
}

func value(t dto.MetricType, mt *dto.Metric) (float64, bool) {
	var v float64
	switch t {
	case dto.MetricType_GAUGE:
		v = mt.GetGauge().GetValue()
	case dto.MetricType_COUNTER:
		v = mt.GetCounter().GetValue()
	case dto.MetricType_UNTYPED:
		v = mt.GetUntyped().GetValue()
	default:
		return 0, false // histograms and summaries are not shown
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// MetricLabels returns the label sets of every sample of the metric name in
// a Prometheus text exposition, in the order exposed. An info-style gauge
// such as vLLM's vllm:cache_config_info{cache_dtype="fp8",block_size="16",…}
// carries its facts in the labels. A missing metric gives nil and no error.
func MetricLabels(r io.Reader, name string) ([]map[string]string, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	fam, ok := fams[name]
	if !ok {
		return nil, nil
	}
	var out []map[string]string
	for _, mt := range fam.GetMetric() {
		l := map[string]string{}
		for _, lp := range mt.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		out = append(out, l)
	}
	return out, nil
}
