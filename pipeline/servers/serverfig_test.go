package servers

import (
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

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
