package pipeline

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// PP stages each log the same batch: one DP rank's stages are not summed;
// DP ranks are. A Ray-wrapped, CRI-prefixed line counts like a plain one.
func TestServerFromLogPPNotSummed(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
	log := filepath.Join(root, "logs", "sglang_inference.log")
	write(t, log, `[2026-11-29 02:59:00] The server is fired up and ready to roll!
[2026-11-29 02:59:58 DP0 PP0 TP0] Decode batch, #running-req: 40, #token: 100, token usage: 0.50, cuda graph: True, gen throughput (token/s): 400.00, #queue-req: 2
[2026-11-29 02:59:58 DP0 PP1 TP4] Decode batch, #running-req: 40, #token: 100, token usage: 0.60, cuda graph: True, gen throughput (token/s): 400.00, #queue-req: 2
2026-11-29T02:59:59.123456789Z stderr F (SGLangEngine pid=77) [2026-11-29 02:59:59 DP1 PP0 TP0] Decode batch, #running-req: 30, #token: 100, token usage: 0.20, cuda graph: True, gen throughput (token/s): 300.00, #queue-req: 3
[2026-11-29 02:59:59 DP1 PP1 TP4] Decode batch, #running-req: 30, #full token: 100, full token usage: 0.20, #swa token: 10, swa token usage: 0.70, cuda graph: True, gen throughput (token/s): 300.00, #queue-req: 3
`)
	now := time.Now()
	must(t, os.Chtimes(log, now, now))
	c.t = now
	sv := poll(localWatcher(t, root, c, Options{})).Server
	if sv.Source != "log" || sv.RunningReqs != 70 || sv.QueueReqs != 5 || sv.GenThroughput != 700 || sv.TokenUsage != 0.7 {
		t.Fatalf("server %+v", sv)
	}
}

func TestMetricRatesFromCounterDeltas(t *testing.T) {
	t.Parallel()
	sv := &srvWatch{}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sg := func(gen, prompt, cached float64) parse.ServerMetrics {
		return parse.ServerMetrics{Dialect: parse.DialectSGLang, GenThroughput: parse.Opt[float64]{V: 5, OK: true},
			GenTokens: parse.Opt[float64]{V: gen, OK: true}, PromptTokens: parse.Opt[float64]{V: prompt, OK: true},
			CachedTokens: parse.Opt[float64]{V: cached, OK: true}}
	}
	if g, h, prev := sv.metricRates(sg(1000, 1000, 0), t0); g != nil || h != nil || prev {
		t.Fatal("a first sample gives no rate")
	}
	g, h, _ := sv.metricRates(sg(3000, 2000, 750), t0.Add(4*time.Second))
	if g == nil || *g != 500 || h == nil || *h != 0.75 {
		t.Fatalf("gen %v hit %v", g, h)
	}
	// a restart: the counters start again from zero
	if g, h, prev := sv.metricRates(sg(10, 10, 0), t0.Add(8*time.Second)); g != nil || h != nil || !prev {
		t.Fatal("a counter reset gives no figure")
	}
	if g, _, _ := sv.metricRates(sg(210, 10, 0), t0.Add(10*time.Second)); g == nil || *g != 100 {
		t.Fatalf("after a restart: %v", g)
	}
	// vLLM: prefix-cache hits over queries
	vl := func(gen, q, hits float64) parse.ServerMetrics {
		return parse.ServerMetrics{Dialect: parse.DialectVLLM, GenTokens: parse.Opt[float64]{V: gen, OK: true},
			PrefixQueries: parse.Opt[float64]{V: q, OK: true}, PrefixHits: parse.Opt[float64]{V: hits, OK: true}}
	}
	sv = &srvWatch{} // a new server
	sv.metricRates(vl(0, 100, 10), t0)
	g, h, _ = sv.metricRates(vl(2000, 300, 60), t0.Add(2*time.Second))
	if g == nil || *g != 1000 || h == nil || *h != 0.25 {
		t.Fatalf("vllm gen %v hit %v", g, h)
	}
}
