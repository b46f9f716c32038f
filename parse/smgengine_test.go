package parse

import (
	"strings"
	"testing"
)

// The gateway's re-export of its engines' load (names and labels:
// smg-project/smg model_gateway/src/observability/metrics.rs @ ed699768):
// each worker's DP ranks are added, the fullest rank's usage kept, and the
// PD queues count as waiting.
func TestRouterMetricsSMGEngines(t *testing.T) {
	text := `# TYPE smg_worker_health gauge
smg_worker_health{worker="http://10.0.0.5:30000"} 1
smg_worker_health{worker="http://10.0.0.6:30000"} 1
# TYPE smg_worker_requests_active gauge
smg_worker_requests_active{worker="http://10.0.0.5:30000"} 70
# TYPE smg_engine_running_requests gauge
smg_engine_running_requests{worker="http://10.0.0.5:30000",model="m",dp_rank="0"} 40
smg_engine_running_requests{worker="http://10.0.0.5:30000",model="m",dp_rank="1"} 30
smg_engine_running_requests{worker="http://10.0.0.6:30000",model="m",dp_rank="0"} 12
# TYPE smg_engine_waiting_requests gauge
smg_engine_waiting_requests{worker="http://10.0.0.5:30000",model="m",dp_rank="0"} 1
smg_engine_waiting_requests{worker="http://10.0.0.6:30000",model="m",dp_rank="0"} 0
# TYPE smg_engine_pd_prefill_queue_reqs gauge
smg_engine_pd_prefill_queue_reqs{worker="http://10.0.0.6:30000",role="prefill",dp_rank="0"} 4
# TYPE smg_engine_token_usage gauge
smg_engine_token_usage{worker="http://10.0.0.5:30000",model="m",dp_rank="0"} 0.5
smg_engine_token_usage{worker="http://10.0.0.5:30000",model="m",dp_rank="1"} 0.8
# TYPE smg_engine_gen_throughput gauge
smg_engine_gen_throughput{worker="http://10.0.0.5:30000",model="m",dp_rank="0"} 800
smg_engine_gen_throughput{worker="http://10.0.0.5:30000",model="m",dp_rank="1"} 700
smg_engine_gen_throughput{worker="http://10.0.0.6:30000",model="m",dp_rank="0"} 200
# TYPE smg_engine_cache_hit_rate gauge
smg_engine_cache_hit_rate{worker="http://10.0.0.5:30000",model="m",dp_rank="0"} 0.2
smg_engine_cache_hit_rate{worker="http://10.0.0.5:30000",model="m",dp_rank="1"} 0.4
`
	m, err := ParseRouterMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	a, b := m.Engines["http://10.0.0.5:30000"], m.Engines["http://10.0.0.6:30000"]
	if a.Running.V != 70 || a.Waiting.V != 1 || a.TokenUsage.V != 0.8 || a.GenThroughput.V != 1500 || !near(a.CacheHitRate.V, 0.3) || a.Ranks != 2 {
		t.Errorf("engine a %+v", a)
	}
	if b.Running.V != 12 || b.Waiting.V != 4 || b.GenThroughput.V != 200 || b.CacheHitRate.OK || b.Ranks != 1 {
		t.Errorf("engine b %+v", b)
	}
	if !m.Workers["http://10.0.0.5:30000"].Healthy.V || m.Workers["http://10.0.0.5:30000"].Running.V != 70 {
		t.Errorf("workers %+v", m.Workers)
	}
}
