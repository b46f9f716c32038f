package pipeline

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
