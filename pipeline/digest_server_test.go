package pipeline

import (
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// The agent sends a server log's history digested (parse.DigestLog): every
// state the bare or noisy log decides, it decides from the digest too,
// with the same reason, even with the whole first read digested (the
// agent digests only what lies before the pane's last kilobytes). The
// noise is long enough here for the digest to drop lines.
func TestServerDigestDecidesAsTheLog(t *testing.T) {
	t.Parallel()
	var families []string
	for f := range noiseFamilies {
		families = append(families, f)
	}
	sort.Strings(families)
	dropped := 0
	for _, tc := range stateCases() {
		if tc.noLog {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(7))
			first, end := interleave(tc.first, tc.vllm, families, r, -1)
			// a long history before it: a busy hour's batch and access lines
			first = busyHour(tc.vllm) + first
			then := tc.then
			if then != "" {
				then, _ = interleave(tc.then, tc.vllm, families, r, end)
			}
			// what a first read starts back from (remote.NewTail's 256 KB,
			// from the line after the one it falls in): the digest's range,
			// so the sums a hit rate takes are over the same lines
			if back := len(first) - 256<<10; back > 0 {
				first = first[back+strings.IndexByte(first[back:], '\n')+1:]
			}
			dg := string(parse.DigestLog(parse.DigestServer, []byte(first)))
			if len(dg) < len(first)/3 {
				dropped++
			}
			want := stateAfter(t, tc, first, then)
			got := stateAfter(t, tc, dg, then)
			if got.Server.State != want.Server.State || got.Server.Reason != want.Server.Reason {
				t.Fatalf("digested (%d of %d bytes): %q (%s), the log: %q (%s)", len(dg), len(first), got.Server.State, got.Server.Reason, want.Server.State, want.Server.Reason)
			}
			g, w := got.Server, want.Server
			if g.RunningReqs != w.RunningReqs || g.QueueReqs != w.QueueReqs || g.GenThroughput != w.GenThroughput || g.TokenUsage != w.TokenUsage ||
				!samePtr(g.CacheHitRate, w.CacheHitRate) || g.FiguresStale != w.FiguresStale || (g.LastBatch == nil) != (w.LastBatch == nil) || g.LastCrash != w.LastCrash || g.Retractions != w.Retractions {
				t.Errorf("figures differ:\n digest %+v\n log    %+v", g, w)
			}
		})
	}
	if dropped < len(stateCases())/2 {
		t.Fatalf("the digest kept more than a third of the busy hour in %d cases of %d: the test proves little", len(stateCases())-dropped, len(stateCases()))
	}
}

func samePtr(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// busyHour is an hour of a busy server before the cases' lines: a decode
// line every 4 s and completions between, stamped before 02:59.
func busyHour(vllm bool) string {
	if vllm {
		return ""
	}
	var b strings.Builder
	b.WriteString("[2026-11-29 01:58:00] The server is fired up and ready to roll!\n")
	for s := 0; s < 3600; s += 4 {
		ts := func(d int) string {
			x := 7080 + s + d // seconds since 00:00 at 01:58
			return "2026-11-29 0" + string(rune('0'+x/3600)) + ":" + two((x/60)%60) + ":" + two(x%60)
		}
		b.WriteString("[" + ts(0) + " TP0] Decode batch, #running-req: 120, #token: 90000, token usage: 0.41, cuda graph: True, gen throughput (token/s): 2400.00, #queue-req: 3\n")
		// SGLang's prefill line (scheduler_metrics_mixin.py @ 01bb3c80):
		// the cache hit rate is the sum of its tokens
		b.WriteString("[" + ts(0) + " TP0] Prefill batch, #new-seq: 2, #new-token: " + strconv.Itoa(500+s%900) + ", #cached-token: " + strconv.Itoa(s%300) + ", token usage: 0.41, #running-req: 120, #queue-req: 3, \n")
		for k := 0; k < 3; k++ {
			b.WriteString("[" + ts(1) + "] INFO:     127.0.0.1:5000 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n")
		}
	}
	return b.String()
}

func two(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }
