package parse

import (
	"fmt"
	"strings"
	"testing"
)

// The digest keeps every line but the middles of progress runs, in order;
// folding the kept lines gives what folding all of them gives: the last
// progress line of each category, every header, error and wait.
func TestDigestWorkerLog(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		"Processing: B1_glaive (SHORT)",
		"B1_glaive: 300 prompts",
		"50/300 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h",
		"100/300 (0 err) 1.2 req/s avg_comp=217tok ETA=2.3h",
		"150/300 (1 err) 1.3 req/s avg_comp=217tok ETA=2.2h",
		"Traceback (most recent call last):",
		"  File \"x.py\", line 1, in <module>",
		"ValueError: boom",
		"200/300 (1 err) 1.3 req/s avg_comp=217tok ETA=2.1h",
		"Server http://127.0.0.1:30000 unavailable (connection refused): waiting for /health",
		"250/300 (1 err) 1.3 req/s avg_comp=217tok ETA=2.0h",
		"260/300 (1 err) 1.3 req/s avg_comp=217tok ETA=1.0h",
		"270/300 (1 err) 1.3 req/s avg_comp=217tok ETA=0.5h",
		"Processing: B2_opencodeinstruct (SHORT)",
		"10/70 (0 err) 2.0 req/s avg_comp=300tok ETA=1m",
		"partial line with no newline",
	}, "\n")
	got := string(DigestLog(DigestWorker, []byte(in)))
	want := strings.Join([]string{
		"Processing: B1_glaive (SHORT)",
		"B1_glaive: 300 prompts",
		"50/300 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h",
		"150/300 (1 err) 1.3 req/s avg_comp=217tok ETA=2.2h",
		"Traceback (most recent call last):",
		"  File \"x.py\", line 1, in <module>",
		"ValueError: boom",
		"200/300 (1 err) 1.3 req/s avg_comp=217tok ETA=2.1h",
		"Server http://127.0.0.1:30000 unavailable (connection refused): waiting for /health",
		"250/300 (1 err) 1.3 req/s avg_comp=217tok ETA=2.0h",
		"270/300 (1 err) 1.3 req/s avg_comp=217tok ETA=0.5h",
		"Processing: B2_opencodeinstruct (SHORT)",
		"10/70 (0 err) 2.0 req/s avg_comp=300tok ETA=1m",
	}, "\n") + "\n"
	if got != want {
		t.Fatalf("digest:\n%s\nwant:\n%s", got, want)
	}
	fold := func(s string) (last map[string]string, tally int, kinds []WorkerKind) {
		last = map[string]string{}
		var ft FailureTally
		cur := ""
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			w := ParseWorkerLine(l)
			if ft.Fold(w) {
				tally++
			}
			switch w.Kind {
			case WProcessing:
				cur = w.Category
			case WProgress:
				last[cur] = l
				continue
			}
			kinds = append(kinds, w.Kind)
		}
		return
	}
	wl, wt, wk := fold(in[:strings.LastIndexByte(in, '\n')+1])
	gl, gt, gk := fold(got)
	if len(wl) != len(gl) || wl["B1_glaive"] != gl["B1_glaive"] || wl["B2_opencodeinstruct"] != gl["B2_opencodeinstruct"] || wt != gt || len(wk) != len(gk) {
		t.Errorf("the digest folds otherwise: last %v vs %v, failures %d vs %d, other kinds %v vs %v", wl, gl, wt, gt, wk, gk)
	}
	if other := DigestLog("none", []byte(in)); string(other) != in {
		t.Errorf("an unknown digest changed the lines")
	}
}

func BenchmarkDigestWorkerLog(b *testing.B) {
	var w strings.Builder
	w.WriteString("Processing: B1_glaive (SHORT)\n")
	for k := 0; w.Len() < 1<<20; k++ {
		w.WriteString("2450/6000 (1 err) 9.8 req/s avg_comp=248tok ETA=6m\n")
	}
	data := []byte(w.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		DigestLog(DigestWorker, data)
	}
}

// A server log's history: decode lines that made tokens between others
// that did go, but the rank's last 32 gaps, a hang (0 tok/s) and the line
// after it stay; runs of completions whose clients' ports differ go but
// the last before a kept line; every other line stays.
func TestDigestServerLog(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[2026-11-29 01:00:00] The server is fired up and ready to roll!\n")
	dec := func(s int, gen string) {
		fmt.Fprintf(&b, "[2026-11-29 01:%02d:%02d TP0] Decode batch, #running-req: 9, #token: 900, token usage: 0.10, cuda graph: True, gen throughput (token/s): %s, #queue-req: 0\n", s/60, s%60, gen)
	}
	acc := func(s, port int) {
		fmt.Fprintf(&b, "[2026-11-29 01:%02d:%02d] INFO:     127.0.0.1:%d - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n", s/60, s%60, port)
	}
	for s := 1; s < 3000; s += 2 {
		gen := "900.00"
		if s >= 1001 && s <= 1005 {
			gen = "0.00" // a hang of three lines
		}
		dec(s, gen)
		acc(s, 40000+s)
		acc(s, 40001+s)
	}
	in := b.String()
	out := string(DigestLog(DigestServer, []byte(in)))
	if len(out) > len(in)/4 {
		t.Errorf("%d of %d bytes kept", len(out), len(in))
	}
	for _, must := range []string{
		"The server is fired up",
		"01:16:41 TP0] Decode batch", "01:16:43 TP0] Decode batch", "01:16:45 TP0] Decode batch", // the hang
		"01:16:47 TP0] Decode batch",                               // the progress after it
		"01:00:01 TP0] Decode batch",                               // the first
		"01:49:59 TP0] Decode batch", "01:48:57 TP0] Decode batch", // the last gaps
		"127.0.0.1:43000 - ", // the last completion
	} {
		if !strings.Contains(out, must) {
			t.Errorf("the digest dropped %q", must)
		}
	}
	if strings.Contains(out, "01:10:01 TP0] Decode batch") || strings.Contains(out, "127.0.0.1:40601 - ") {
		t.Errorf("the middle of a run was kept")
	}
	if got := strings.Count(out, "\n"); got >= strings.Count(in, "\n")/4 {
		t.Errorf("%d lines kept", got)
	}
}

// Tracebacks printed by several threads at once stay open across progress
// lines, and FailureTally takes the next line for each one's exception:
// the digest keeps those lines, so it counts the failures the log does.
func TestDigestWorkerLogKeepsTheFailureTally(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		"Processing: B1_glaive (SHORT)",
		"Traceback (most recent call last):",
		"Traceback (most recent call last):",
		"Traceback (most recent call last):",
		"50/300 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h",
		"100/300 (0 err) 1.2 req/s avg_comp=217tok ETA=2.3h",
		"150/300 (0 err) 1.3 req/s avg_comp=217tok ETA=2.2h",
		"TimeoutError: the server took too long",
		"B1_glaive: id 7 failed: 400 bad request",
		"200/300 (1 err) 1.3 req/s avg_comp=217tok ETA=2.1h",
	}, "\n") + "\n"
	count := func(s string) int {
		var ft FailureTally
		n := 0
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			if ft.Fold(ParseWorkerLine(l)) {
				n++
			}
		}
		return n
	}
	if got, want := count(string(DigestLog(DigestWorker, []byte(in)))), count(in); got != want {
		t.Fatalf("the digest counts %d failures, the log %d", got, want)
	}
}

// A server log in SGLang's current format (log_prefill_stats and
// log_decode_stats, python/sglang/srt/managers/scheduler_metrics_mixin.py
// @ 01bb3c80: a prefill line has no rate unless the server is PD's prefill
// side), two DP ranks: the prefill lines in the middle of a run go, and
// one line in their place carries their #new-token and #cached-token, so
// the digest's sums are the log's. The old line with its lifetime "cache
// hit rate" and a mixed line stay as they are, and so do the last gaps'.
func TestDigestServerLogSumsPrefillLines(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[2026-11-29 01:00:00] The server is fired up and ready to roll!\n")
	for s := 1; s < 2400; s++ {
		ts := fmt.Sprintf("2026-11-29 01:%02d:%02d", s/60, s%60)
		dp := s % 2
		switch s % 4 {
		case 0:
			fmt.Fprintf(&b, "[%s DP%d TP0] Decode batch, #running-req: 40, #token: 9000, token usage: 0.31, cuda graph: True, gen throughput (token/s): %d.00, #queue-req: 2, \n", ts, dp, 1500+s%97)
		case 1:
			fmt.Fprintf(&b, "[%s DP%d TP0] Prefill batch, #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: 0.31, #running-req: 40, #queue-req: 2, \n", ts, dp, 1+s%5, 300+s%1111, s%733)
		case 2:
			fmt.Fprintf(&b, "[%s] INFO:     127.0.0.1:%d - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n", ts, 30000+s)
		default:
			fmt.Fprintf(&b, "[%s DP%d TP0] Prefill batch, #new-seq: 1, #new-token: %d, #cached-token: 0, token usage: 0.31, #running-req: 40, #queue-req: 2, \n", ts, dp, 10+s%7)
		}
	}
	b.WriteString("[2026-11-29 01:40:00 DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 77, #cached-token: 5, token usage: 0.31, #running-req: 40, #queue-req: 2, \n")
	b.WriteString("[2026-11-29 01:40:00 DP1 TP0] Prefill batch, #new-seq: 1, #new-token: 90, cache hit rate: 41.20%, token usage: 0.31, #running-req: 40, #queue-req: 2\n")
	b.WriteString("[2026-11-29 01:40:00 DP1 TP0] Prefill batch(mixed #running-req: 3), #new-seq: 1, #new-token: 11, #cached-token: 2, token usage: 0.31, #running-req: 40, #queue-req: 2\n")
	for s := 1; s < 120; s++ {
		fmt.Fprintf(&b, "[2026-11-29 01:4%d:%02d DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 64, token usage: 0.31, #running-req: 40, #queue-req: 2, \n", 1+s/60, s%60)
	}
	in := b.String()
	out := string(DigestLog(DigestServer, []byte(in)))
	sums := func(log string) (n, c int) {
		for _, l := range strings.Split(log, "\n") {
			ev := ParseServerLine(l)
			if ev.Kind == SBatch && ev.Batch.Phase == Prefill {
				n += ev.Batch.NewTokens.V
				c += ev.Batch.CachedTokens.V
			}
		}
		return n, c
	}
	wn, wc := sums(in)
	gn, gc := sums(out)
	if gn != wn || gc != wc {
		t.Errorf("digest's prefill sums %d new, %d cached; the log's %d, %d", gn, gc, wn, wc)
	}
	if strings.Count(out, "#lines-summed: ") != 1 {
		t.Errorf("want one line of sums:\n%s", out)
	}
	if len(out) > len(in)/5 {
		t.Errorf("%d of %d bytes kept", len(out), len(in))
	}
	for _, must := range []string{
		"01:40:00 DP1 TP0] Prefill batch, #new-seq: 1, #new-token: 90, cache hit rate: 41.20%", // an old line's lifetime rate
		"Prefill batch(mixed #running-req: 3)",
		"01:42:59 DP0 TP0] Prefill batch", "01:42:27 DP0 TP0] Prefill batch", // the last gaps
		"01:00:01 DP1 TP0] Prefill batch", // a rank's first
	} {
		if !strings.Contains(out, must) {
			t.Errorf("the digest dropped %q", must)
		}
	}
	if strings.Contains(out, "01:20:01 DP1 TP0] Prefill batch") {
		t.Errorf("the middle of a run was kept")
	}
}
