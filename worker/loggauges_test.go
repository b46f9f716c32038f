package worker

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// TestLogGaugesFollowTheSchedulerLines: the gauges are the newest batch line
// of each DP rank (summed; a Prefill line counts its new requests as
// running), retractions add up, lines older than fresh do not count, what
// the log held before the first look is history, and a rotated log is read
// from its start.
func TestLogGaugesFollowTheSchedulerLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sglang.log")
	write := func(lines ...string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, l := range lines {
			if _, err := f.WriteString(l + "\n"); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("[2026-12-02 10:00:00 DP0 TP0] Decode batch, #running-req: 500, #token: 1000, token usage: 0.99, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 99")
	l := newLogGauges(path)
	now := time.Now()
	if g := l.read(now, time.Minute); g.OK {
		t.Fatalf("history read as the state now: %+v", g)
	}
	write(
		"[2026-12-02 10:00:01 DP0 TP0] Decode batch, #running-req: 30, #token: 90000, token usage: 0.47, cuda graph: True, gen throughput (token/s): 400.00, #queue-req: 2",
		"[2026-12-02 10:00:01 DP1 TP1] Prefill batch, #new-seq: 4, #new-token: 2000, #cached-token: 0, token usage: 0.71, #running-req: 36, #queue-req: 1, ",
		"[2026-12-02 10:00:02 DP1 TP1] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.3000 -> 0.9000",
		"[2026-12-02 10:00:02 DP1 TP1] Decode batch, #running-req: 34",
	)
	g := l.read(now, time.Minute)
	want := Gauges{OK: true, FromLog: true, Running: 30 + 36 + 4, Queued: 3, Usage: 0.71, Retracted: 3}
	if g != want {
		t.Errorf("gauges %+v, want %+v", g, want)
	}
	if g := l.read(now.Add(2*time.Minute), time.Minute); g.OK || g.Retracted != 3 {
		t.Errorf("stale lines give %+v: want not OK, the counter kept", g)
	}
	// rotated: a new file whose lines are all new
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	write("[2026-12-02 10:01:00 TP0] Decode batch, #running-req: 8, #token: 100, token usage: 0.10, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0",
		"[2026-12-02 10:01:00 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.3000 -> 0.9000")
	g = l.read(now.Add(3*time.Minute), time.Minute)
	if !g.OK || g.Running != 8 || g.Queued != 0 || g.Retracted != 4 {
		t.Errorf("after rotation %+v: want 8 running (the old ranks stale), 4 retracted", g)
	}
}

// TestAdaptiveWindowFromTheServerLog: a load sim that serves no /metrics
// (SGLang without --enable-metrics) and writes its log where the worker
// looks: the window is steered by the log's gauges (every reason names the
// KV usage, which only gauges give), grows, and every prompt is written once.
func TestAdaptiveWindowFromTheServerLog(t *testing.T) {
	t.Parallel()
	root := makeLoadRoot(t, "B1", 600, 500)
	logPath := filepath.Join(root, filepath.FromSlash(parse.ServerLogPath))
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := startSim(t, sim.Options{Load: true, Speed: 100, MaxTotal: 60000, ShortMean: 600, NoMetrics: true, Log: f})
	if r, err := http.Get(s.URL() + "/metrics"); err != nil || r.StatusCode != http.StatusNotFound {
		t.Fatalf("the sim serves /metrics: %v %v", r, err)
	}
	var log syncBuffer
	err = Run(context.Background(), Config{Root: root, Server: s.URL(), MaxConcurrency: 120, AdaptEvery: 100 * time.Millisecond}, &log)
	if err != nil {
		t.Fatalf("worker: %v\n%s", err, log.String())
	}
	checkOutput(t, root, "B1", 600)
	gauged := regexp.MustCompile(` window (\d+) [↑↓=]+ .*; KV \d+ %`)
	peak := 0
	for _, line := range strings.Split(log.String(), "\n") {
		if m := gauged.FindStringSubmatch(line); m != nil {
			peak = max(peak, atoi(m[1]))
		}
	}
	if peak <= startWindow {
		t.Errorf("no progress line shows a window grown on the log's gauges (peak %d):\n%s", peak, log.String())
	}
	logText, _ := os.ReadFile(logPath)
	if !strings.Contains(string(logText), "enable_metrics=False") || !regexp.MustCompile(`#queue-req: [1-9]`).Match(logText) {
		t.Errorf("the sim's log shows no metrics switch or never a queue")
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
