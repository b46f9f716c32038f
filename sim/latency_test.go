package sim

import (
	"sync"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// The sim's /metrics carries the latency histograms where SGLang and vLLM
// do, under their names, observed as they observe them: one queue time,
// one TTFT and one e2e per finished request, an ITL per later token; the
// two requests that waited for a slot show in the queue time's tail.
func TestMetricsLatencyHistograms(t *testing.T) {
	for _, flavor := range []string{"sglang", "vllm"} {
		t.Run(flavor, func(t *testing.T) {
			s := start(t, Options{Speed: 10, TokPerSec: 20, Capacity: 2, Flavor: flavor})
			var wg sync.WaitGroup
			gen := make([]float64, 4)
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					code, m := post(t, s.URL()+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":40}`)
					if code != 200 {
						t.Errorf("chat %d %v", code, m)
						return
					}
					gen[i] = m["usage"].(map[string]any)["completion_tokens"].(float64)
				}()
			}
			wg.Wait()
			met := getMetrics(t, s)
			total := gen[0] + gen[1] + gen[2] + gen[3]
			lat := met.Latency
			for _, k := range []string{parse.LatQueue, parse.LatTTFT, parse.LatE2E} {
				if n := lat[k].Count(); n != 4 {
					t.Errorf("%s: %v observations, want 4", k, n)
				}
			}
			if n := lat[parse.LatITL].Count(); n <= 0 || n > total {
				t.Errorf("itl: %v observations for %v tokens", n, total)
			}
			ttft, _ := lat[parse.LatTTFT].Quantile(0.5)
			e2e, _ := lat[parse.LatE2E].Quantile(0.5)
			q99, _ := lat[parse.LatQueue].Quantile(0.99)
			q50, _ := lat[parse.LatQueue].Quantile(0.5)
			if e2e <= ttft || q99 <= q50 {
				t.Errorf("ttft p50 %v e2e p50 %v; queue p50 %v p99 %v", ttft, e2e, q50, q99)
			}
		})
	}
}
