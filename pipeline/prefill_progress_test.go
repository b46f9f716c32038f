package pipeline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// SGLang's prefill line gives no rate (scheduler_metrics_mixin.py
// log_prefill_stats @ 01bb3c80; only a PD prefill server adds "input
// throughput"): its #new-token is its progress. A busy server whose log
// ends on prefill lines, each with requests running, is busy, not "hung
// at 0 tok/s" (it read hung before).
func TestPrefillLinesAreProgress(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[2026-11-29 02:58:00] The server is fired up and ready to roll!\n")
	for s := 0; s < 40; s++ {
		fmt.Fprintf(&b, "[2026-11-29 02:59:%02d TP0] Decode batch, #running-req: 120, #token: 90000, token usage: 0.41, cuda graph: True, gen throughput (token/s): 2400.00, #queue-req: 3, \n", s)
		fmt.Fprintf(&b, "[2026-11-29 02:59:%02d TP0] Prefill batch, #new-seq: 2, #new-token: 900, #cached-token: 100, token usage: 0.41, #running-req: 120, #queue-req: 3, \n", s)
	}
	s := stateAfter(t, stateCase{name: "prefill last"}, b.String(), "")
	if s.Server.State != snapshot.ServerBusy || strings.Contains(s.Server.Reason, "tok/s") {
		t.Fatalf("server %q (%s), want busy", s.Server.State, s.Server.Reason)
	}
	if h := s.Server.CacheHitRate; h == nil || *h != 0.1 {
		t.Errorf("cache hit rate %v, want 0.1 (100 cached of 1,000)", h)
	}
}
