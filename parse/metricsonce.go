package parse

import (
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// How a server's series are counted once. Sources, sgl-project/sglang
// python/sglang/srt/observability/metrics_collector.py (copies @ 016d8605
// and 44cedc2b):
//   - SchedulerMetricsCollector.init_new labels each scheduler with
//     model_name, engine_type, tp_rank, pp_rank, moe_ep_rank, dp_rank (when
//     DP) and priority="" (with priority scheduling). Only the stats logging
//     rank (attn_tp_rank == 0) exports, unless
//     --enable-metrics-for-all-schedulers: then every TP rank of a DP rank
//     exports the same batch (is_stats_logging_rank = ps.attn_tp_rank == 0;
//     current_scheduler_metrics_enabled = enable_metrics and
//     (is_stats_logging_rank or enable_metrics_for_all_schedulers)).
//   - _log_gauge_queue_count writes num_running_reqs / num_queue_reqs (and
//     the PD queues) as the total under the default labels (priority="")
//     and, with priority scheduling, one series per priority
//     (labels["priority"] = str(priority): "None" when no
//     --default-priority-value is set). "Grafana queries should use
//     priority="" for totals."
//
// So: a series with a non-empty priority is a breakdown and is skipped;
// series that differ only in tp_rank, pp_rank or moe_ep_rank are one batch
// and counted once (the highest, as the log's PP stages are); what is left
// (DP ranks, vLLM engines, cache_source, finished_reason …) is added.

// rankDup are the labels whose values report the same batch.
var rankDup = map[string]bool{"tp_rank": true, "pp_rank": true, "moe_ep_rank": true, "attn_tp_rank": true}

type series struct {
	labels map[string]string
	v      float64
	h      Histogram
}

func labelMap(mt *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, lp := range mt.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}

// groupKey is a series' labels without the ones that repeat a batch.
func groupKey(l map[string]string) string {
	var keys []string
	for k := range l {
		if !rankDup[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + l[k] + "\x00")
	}
	return b.String()
}

// totals drops the per-priority breakdown when the total is there.
func totals(all []series) []series {
	var out []series
	for _, s := range all {
		if s.labels["priority"] == "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return all // a breakdown without its total: its parts are the whole
	}
	return out
}

// countOnce is a gauge's or counter's series counted once: one per group
// (the highest of ranks that report one batch), in a stable order.
func countOnce(all []series) []series {
	byKey := map[string]*series{}
	var order []string
	for _, s := range totals(all) {
		k := groupKey(s.labels)
		cur, ok := byKey[k]
		if !ok {
			c := s
			byKey[k] = &c
			order = append(order, k)
			continue
		}
		cur.v = math.Max(cur.v, s.v)
	}
	out := make([]series, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out
}

// mergeOnce is a histogram's series counted once (of ranks that observe
// the same requests, the one that observed most) and added over groups.
func mergeOnce(all []series) Histogram {
	byKey := map[string]Histogram{}
	for _, s := range totals(all) {
		k := groupKey(s.labels)
		if cur, ok := byKey[k]; !ok || s.h.Count() > cur.Count() {
			byKey[k] = s.h
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	hs := make([]Histogram, 0, len(keys))
	for _, k := range keys {
		hs = append(hs, byKey[k])
	}
	if len(hs) == 1 {
		return hs[0]
	}
	return MergeHistograms(hs...)
}

// rankOf is the replica a series belongs to: SGLang's dp_rank, vLLM's engine.
func rankOf(l map[string]string) string {
	if r := l["dp_rank"]; r != "" {
		return "dp" + r
	}
	if e := l["engine"]; e != "" {
		return "engine " + e
	}
	return ""
}

// ranks is the per-replica figures when there are several replicas.
func ranks(byRank map[string]map[string]float64) []RankMetrics {
	names := map[string]bool{}
	for _, per := range byRank {
		for r := range per {
			names[r] = true
		}
	}
	if len(names) < 2 {
		return nil
	}
	get := func(r string, metrics ...string) Opt[float64] {
		for _, n := range metrics {
			if v, ok := byRank[n][r]; ok {
				return some(v)
			}
		}
		return Opt[float64]{}
	}
	var out []RankMetrics
	for r := range names {
		rm := RankMetrics{Rank: r,
			RunningReqs:   get(r, "sglang:num_running_reqs", "vllm:num_requests_running"),
			QueueReqs:     get(r, "sglang:num_queue_reqs", "vllm:num_requests_waiting"),
			TokenUsage:    get(r, "sglang:token_usage", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
			GenThroughput: get(r, "sglang:gen_throughput"),
			GenTokens:     get(r, "vllm:generation_tokens_total"),
		}
		if !rm.RunningReqs.OK && !rm.QueueReqs.OK && !rm.GenThroughput.OK && !rm.GenTokens.OK {
			continue // a label on some other series only
		}
		out = append(out, rm)
	}
	sort.Slice(out, func(i, j int) bool { return rankLess(out[i].Rank, out[j].Rank) })
	if len(out) < 2 {
		return nil
	}
	return out
}

// rankLess orders dp2 before dp10.
func rankLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// histogramOf reads one histogram sample; the +Inf bucket is added when
// the exposition left it implicit.
func histogramOf(mt *dto.Metric) (Histogram, bool) {
	ph := mt.GetHistogram()
	if ph == nil || len(ph.GetBucket()) == 0 {
		return Histogram{}, false
	}
	var h Histogram
	for _, b := range ph.GetBucket() {
		c := float64(b.GetCumulativeCount())
		if b.CumulativeCountFloat != nil {
			c = b.GetCumulativeCountFloat()
		}
		h.Bounds = append(h.Bounds, b.GetUpperBound())
		h.Counts = append(h.Counts, c)
	}
	if !math.IsInf(h.Bounds[len(h.Bounds)-1], 1) {
		n := float64(ph.GetSampleCount())
		if ph.SampleCountFloat != nil {
			n = ph.GetSampleCountFloat()
		}
		h.Bounds = append(h.Bounds, math.Inf(1))
		h.Counts = append(h.Counts, math.Max(n, h.Counts[len(h.Counts)-1]))
	}
	h.Sum = ph.GetSampleSum()
	return h, true
}

// Latency kinds: the request latencies the server TUIs show.
const (
	LatTTFT  = "ttft"  // time to first token
	LatITL   = "itl"   // inter-token latency
	LatE2E   = "e2e"   // end-to-end request latency
	LatQueue = "queue" // time waiting in the scheduler's queue
)

// LatencyKinds in the order they are shown.
var LatencyKinds = []string{LatTTFT, LatITL, LatE2E, LatQueue}

// latencyNames are each kind's histograms, the preferred first. Sources:
//   - SGLang metrics_collector.py (above): TokenizerMetricsCollector's
//     sglang:time_to_first_token_seconds, sglang:inter_token_latency_seconds,
//     sglang:e2e_request_latency_seconds; SchedulerMetricsCollector's
//     sglang:queue_time_seconds. Older servers named ITL
//     sglang:time_per_output_token_seconds.
//   - vLLM vllm/v1/metrics/loggers.py (PrometheusStatLogger):
//     vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds
//     (before: vllm:time_per_output_token_seconds),
//     vllm:e2e_request_latency_seconds, vllm:request_queue_time_seconds.
var latencyNames = map[string][]string{
	LatTTFT:  {"sglang:time_to_first_token_seconds", "vllm:time_to_first_token_seconds"},
	LatITL:   {"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds", "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"},
	LatE2E:   {"sglang:e2e_request_latency_seconds", "vllm:e2e_request_latency_seconds"},
	LatQueue: {"sglang:queue_time_seconds", "vllm:request_queue_time_seconds"},
}

var latencyKind = func() map[string]string {
	out := map[string]string{}
	for k, ns := range latencyNames {
		for _, n := range ns {
			out[n] = k
		}
	}
	return out
}()
