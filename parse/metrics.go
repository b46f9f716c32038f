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

// ServerMetrics is what the dashboard shows from a server's /metrics,
// each series counted the way the server means it (see countOnce): a
// total beside its per-priority breakdown is taken once, the TP (and PP,
// EP) ranks of one DP rank report one batch and are taken once, DP ranks
// and vLLM engines are added. Usage and hit rate take the highest rank: a
// full rank is what matters. Every field is a fraction or a plain count;
// none is a percent.
type ServerMetrics struct {
	Dialect Dialect
	// GenThroughput is SGLang's sglang:gen_throughput gauge (token/s): the
	// figure of the last decode log line, not a rate over the poll. vLLM has
	// none. A watcher computes the rate from GenTokens between two polls,
	// and falls back on this gauge when the counter did not move: SGLang
	// adds a request's tokens to the counter only when it finishes.
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
	// Retracted is the counter sglang:num_retracted_requests_total, else
	// (older servers) the gauge sglang:num_retracted_reqs. RetractedLast is
	// that gauge: the retractions of the last logging interval only. The
	// two are never added.
	Retracted     Opt[float64]
	RetractedLast Opt[float64]
	Preemptions   Opt[float64] // counter (vLLM)

	// Speculative decoding. SGLang: the gauges sglang:spec_accept_length
	// and sglang:spec_accept_rate of the last interval (the mean of the DP
	// ranks that report one). vLLM: the counters, for rates over a window.
	SpecAcceptLength Opt[float64]
	SpecAcceptRate   Opt[float64]
	SpecAccepted     Opt[float64] // counter: vllm:spec_decode_num_accepted_tokens_total
	SpecDraftTokens  Opt[float64] // counter: vllm:spec_decode_num_draft_tokens_total
	SpecDrafts       Opt[float64] // counter: vllm:spec_decode_num_drafts_total

	// KVCacheDType is vLLM's cache_dtype label of vllm:cache_config_info
	// ("auto", "fp8", ...); SGLang exports no such series.
	KVCacheDType string

	// Latency is the request-latency histograms, by LatencyKinds' names,
	// each counted once and added over DP ranks and engines.
	Latency map[string]Histogram

	// Ranks is one entry per DP rank (SGLang's dp_rank label) or engine
	// (vLLM's engine label) when the server exports more than one.
	Ranks []RankMetrics

	// Values holds every sglang:* and vllm:* gauge and counter, counted
	// once as above, by name as exposed with the prefix sglang: (a server
	// exporting sglang_ names is read the same) and counters keeping their
	// _total suffix.
	Values map[string]float64
}

// RankMetrics is one DP rank's or engine's own figures.
type RankMetrics struct {
	Rank          string // the dp_rank or engine label's value
	RunningReqs   Opt[float64]
	QueueReqs     Opt[float64]
	TokenUsage    Opt[float64]
	GenThroughput Opt[float64] // SGLang's gauge
	GenTokens     Opt[float64] // vLLM's counter, per engine
}

// ParseMetrics reads the Prometheus text format with expfmt.
func ParseMetrics(r io.Reader) (ServerMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return ServerMetrics{}, fmt.Errorf("parse metrics: %w", err)
	}
	m := ServerMetrics{Values: map[string]float64{}, Latency: map[string]Histogram{}}
	maxOf := map[string]float64{}
	byRank := map[string]map[string]float64{} // name → rank → value
	hists := map[string][]series{}
	for raw, fam := range fams {
		name := canonicalName(raw)
		if !strings.HasPrefix(name, "sglang:") && !strings.HasPrefix(name, "vllm:") {
			continue
		}
		if name == "vllm:cache_config_info" {
			for _, mt := range fam.GetMetric() {
				if d := labelOf(mt.GetLabel(), "cache_dtype"); d != "" {
					m.KVCacheDType = d
				}
			}
		}
		if fam.GetType() == dto.MetricType_HISTOGRAM {
			if _, ok := latencyKind[name]; ok {
				for _, mt := range fam.GetMetric() {
					if h, ok := histogramOf(mt); ok {
						hists[name] = append(hists[name], series{labels: labelMap(mt), h: h})
					}
				}
			}
			continue
		}
		var all []series
		for _, mt := range fam.GetMetric() {
			if v, ok := value(fam.GetType(), mt); ok {
				all = append(all, series{labels: labelMap(mt), v: v})
			}
		}
		if len(all) == 0 {
			continue
		}
		groups := countOnce(all)
		for _, g := range groups {
			m.Values[name] += g.v
			if cur, seen := maxOf[name]; !seen || g.v > cur {
				maxOf[name] = g.v
			}
			if rk := rankOf(g.labels); rk != "" {
				if byRank[name] == nil {
					byRank[name] = map[string]float64{}
				}
				byRank[name][rk] += g.v
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
	m.RetractedLast = sum("sglang:num_retracted_reqs")
	m.Retracted = sum("sglang:num_retracted_requests_total", "sglang:num_retracted_reqs")
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
	m.SpecAcceptLength = meanReporting(byRank["sglang:spec_accept_length"], m.Values["sglang:spec_accept_length"], maxOf, "sglang:spec_accept_length")
	m.SpecAcceptRate = meanReporting(byRank["sglang:spec_accept_rate"], m.Values["sglang:spec_accept_rate"], maxOf, "sglang:spec_accept_rate")
	m.SpecAccepted = sum("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_accepted_tokens")
	m.SpecDraftTokens = sum("vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_draft_tokens")
	m.SpecDrafts = sum("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_drafts")
	for _, k := range LatencyKinds {
		for _, n := range latencyNames[k] {
			if ss := hists[n]; len(ss) > 0 {
				m.Latency[k] = mergeOnce(ss)
				break
			}
		}
	}
	m.Ranks = ranks(byRank)
	return m, nil
}

// meanReporting is a per-rank gauge's mean over the ranks that report a
// figure above 0 (a rank that decoded nothing this interval says 0), or
// the one figure of a server without ranks.
func meanReporting(per map[string]float64, total float64, maxOf map[string]float64, name string) Opt[float64] {
	if _, ok := maxOf[name]; !ok {
		return Opt[float64]{}
	}
	if len(per) == 0 {
		return some(total)
	}
	var s float64
	n := 0
	for _, v := range per {
		if v > 0 {
			s += v
			n++
		}
	}
	if n == 0 {
		return some(0.0)
	}
	return some(s / float64(n))
}

// canonicalName reads sglang_X as sglang:X: some exporters and proxies
// rewrite the colon, and tokos and llm-d dashboards broke on the change.
func canonicalName(n string) string {
	if rest, ok := strings.CutPrefix(n, "sglang_"); ok {
		return "sglang:" + rest
	}
	return n
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
