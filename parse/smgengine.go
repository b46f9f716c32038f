package parse

import (
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// The gateway (smg, the renamed SGLang router) re-exports each engine's
// own load report, one series per worker and DP rank. Source:
// smg-project/smg model_gateway/src/observability/metrics.rs @ ed699768
// ("Layer 3: Engine load re-export (from the GetLoads poll loop)"):
// smg_engine_running_requests, smg_engine_waiting_requests,
// smg_engine_token_usage (0–1), smg_engine_gen_throughput (tokens/s),
// smg_engine_cache_hit_rate (0–1), labels worker, model, dp_rank; and
// smg_engine_pd_{prefill,decode}_queue_reqs, labels worker, role, dp_rank.
// Its docs: the gauges of a worker that leaves Ready are removed, and they
// are read at the gateway's load-poll cadence (--load-monitor-interval,
// 10 s by default), so they may be that old.

// EngineMetrics is one engine's figures as the gateway re-exports them,
// its DP ranks added (usage: the fullest rank; hit rate: the mean).
type EngineMetrics struct {
	Running       Opt[float64]
	Waiting       Opt[float64] // with the PD prefill and decode queues
	TokenUsage    Opt[float64]
	GenThroughput Opt[float64]
	CacheHitRate  Opt[float64]
	Ranks         int // DP ranks reported
}

var engineSeries = map[string]string{
	"smg_engine_running_requests":      "running",
	"smg_engine_waiting_requests":      "waiting",
	"smg_engine_token_usage":           "usage",
	"smg_engine_gen_throughput":        "gen",
	"smg_engine_cache_hit_rate":        "hit",
	"smg_engine_pd_prefill_queue_reqs": "waiting",
	"smg_engine_pd_decode_queue_reqs":  "waiting",
}

// foldEngine adds one smg_engine_* family to engines; false when name is
// none of them.
func foldEngine(engines map[string]EngineMetrics, name string, fam *dto.MetricFamily) bool {
	field, ok := engineSeries[name]
	if !ok {
		return false
	}
	hits := map[string][2]float64{}
	ranks := map[string]map[string]bool{}
	for _, mt := range fam.GetMetric() {
		v, ok := value(fam.GetType(), mt)
		url := labelOf(mt.GetLabel(), "worker")
		if !ok || url == "" {
			continue
		}
		if ranks[url] == nil {
			ranks[url] = map[string]bool{}
		}
		ranks[url][labelOf(mt.GetLabel(), "dp_rank")] = true
		e := engines[url]
		add := func(o *Opt[float64]) { *o = some(o.V + v) }
		switch field {
		case "running":
			add(&e.Running)
		case "waiting":
			add(&e.Waiting)
		case "gen":
			add(&e.GenThroughput)
		case "usage":
			e.TokenUsage = some(math.Max(e.TokenUsage.V, v))
		case "hit":
			h := hits[url]
			hits[url] = [2]float64{h[0] + v, h[1] + 1}
		}
		engines[url] = e
	}
	for url, h := range hits {
		e := engines[url]
		e.CacheHitRate = some(h[0] / h[1])
		engines[url] = e
	}
	for url, r := range ranks {
		e := engines[url]
		e.Ranks = max(e.Ranks, len(r))
		engines[url] = e
	}
	return strings.HasPrefix(name, "smg_engine_")
}
