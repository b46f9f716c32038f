package worker

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// makeLoadRoot lays out one category of n prompts of about promptTok
// tokens each (the sim counts 4 bytes a token), so the KV they take is real.
func makeLoadRoot(t testing.TB, cat string, n, promptTok int) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", cat)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("word ", promptTok*4/5)
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"id":"%s-%d","messages":[{"role":"user","content":"question %d %s"}]}`+"\n", cat, i, i, pad)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestAdaptiveWindowFillsTheLoadSim: the default worker against the load
// model. It starts at a small window, grows while the server takes all it
// is sent, until the server holds a queue (full: its KV decides the batch),
// never past --max-concurrency, says why in worker.json and the progress
// line, and every prompt is written once.
func TestAdaptiveWindowFillsTheLoadSim(t *testing.T) {
	t.Parallel()
	s := startSim(t, sim.Options{Load: true, Speed: 100, MaxTotal: 60000, ShortMean: 600})
	const n = 600
	root := makeLoadRoot(t, "B1", n, 500)
	var log syncBuffer
	stop := make(chan struct{})
	traceC := windowTrace(root, s, stop)
	err := Run(context.Background(), Config{Root: root, Server: s.URL(), MaxConcurrency: 120, AdaptEvery: 100 * time.Millisecond}, &log)
	close(stop)
	tr := <-traceC
	if err != nil {
		t.Fatalf("worker: %v\n%s", err, log.String())
	}
	maxWindow, maxQueue, reasons := 0, 0.0, map[string]bool{}
	for _, smp := range tr {
		maxWindow, maxQueue = max(maxWindow, smp.window), max(maxQueue, smp.queued)
		reasons[smp.reason] = true
	}
	checkOutput(t, root, "B1", n)
	if maxWindow <= startWindow || maxWindow > 120 {
		t.Errorf("window peaked at %d (start %d, cap 120)", maxWindow, startWindow)
	}
	if maxQueue == 0 {
		t.Errorf("the server never held a queue: never full (max window %d)", maxWindow)
	}
	// worker.json is rewritten every second: it may miss a change, but
	// every reason it shows says where the window went and why
	reasonRE := regexp.MustCompile(`^(start|(↑↑? room: queue \d+, running \d+|↓ queue \d+ waiting, running flat at \d+|= admission holding back: \d+ waiting, running rising to \d+|= the server holds \d+ of \d+ sent|↓ \d+ retracted|↓ tokens/s fell from \d+ to \d+|↓ \d+ failed); KV \d+ %)$`)
	for r := range reasons {
		if r != "" && !reasonRE.MatchString(r) {
			t.Errorf("worker.json window_reason %q", r)
		}
	}
	if !strings.Contains(log.String(), "B1: adaptive window from 8 to at most 120") || !strings.Contains(log.String(), " window ") {
		t.Errorf("log says nothing of the window:\n%s", log.String())
	}
	for _, line := range strings.Split(log.String(), "\n") {
		if wl := parse.ParseWorkerLine(line); wl.Kind == parse.WProgress && !strings.Contains(line, " window ") {
			t.Errorf("a progress line without the window: %q", line)
		}
	}
}

// traceSample is worker.json's window and reason and the server's queue.
type traceSample struct {
	windowSample
	reason string
	queued float64
}

// windowTrace samples worker.json's window and reason, and the server's
// queue, every 20 ms until stop is closed.
func windowTrace(root string, s *sim.Server, stop <-chan struct{}) <-chan []traceSample {
	out := make(chan []traceSample, 1)
	go func() {
		start := time.Now()
		var tr []traceSample
		for {
			select {
			case <-stop:
				out <- tr
				return
			case <-time.After(20 * time.Millisecond):
			}
			w, why := stateWindow(root)
			if w == 0 {
				continue
			}
			smp := traceSample{windowSample: windowSample{time.Since(start), w}, reason: why}
			if r, err := http.Get(s.URL() + "/metrics"); err == nil {
				if m, err := parse.ParseMetrics(r.Body); err == nil {
					smp.queued = m.QueueReqs.V
				}
				r.Body.Close()
			}
			tr = append(tr, smp)
		}
	}()
	return out
}

// meanWindow is the mean window over samples in [from, to).
func meanWindow(tr []traceSample, from, to time.Duration) float64 {
	sum, n := 0, 0
	for _, s := range tr {
		if s.at >= from && s.at < to {
			sum += s.window
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

// TestAdaptiveWindowFollowsRestartAndHalvedCapacity: mid-run the load sim
// restarts (every request in flight is cut), later its KV pool halves. The
// window falls after the restart and grows back, then settles lower once
// the pool is half; every prompt is written exactly once.
func TestAdaptiveWindowFollowsRestartAndHalvedCapacity(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	s := startSim(t, sim.Options{Load: true, Speed: 100, MaxTotal: 80000, ShortMean: 600})
	const n = 2500
	root := makeLoadRoot(t, "B1", n, 500)
	var log syncBuffer
	stop := make(chan struct{})
	traceC := windowTrace(root, s, stop)
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{Root: root, Server: s.URL(), MaxConcurrency: 400, AdaptEvery: 50 * time.Millisecond}, &log)
	}()
	written := func() int { return countLines(t, filepath.Join(root, "prepared", "B1", "raw_responses.jsonl")) }
	start := time.Now()
	var seen []windowSample // worker.json's window, as the waits see it
	waitFor := func(until func() bool) {
		deadline := time.Now().Add(2 * time.Minute)
		for !until() {
			if time.Now().After(deadline) {
				t.Fatalf("only %d records after 2 minutes\n%s", written(), log.String())
			}
			if w, _ := stateWindow(root); w > 0 {
				seen = append(seen, windowSample{time.Since(start), w})
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	records := func(k int) func() bool { return func() bool { return written() >= k } }
	waitFor(records(n / 5))
	restartAt := time.Since(start)
	s.Down(time.Second) // long enough that a sample of worker.json on a loaded machine sees the window fall
	waitFor(records(n / 2))
	// the pool halves once the window has grown back, or at 70 % of the
	// prompts: a window that peaked high before the restart takes longer
	// to regrow than half the prompts last on a loaded machine
	var early []windowSample
	for _, w := range seen {
		if w.at < restartAt {
			early = append(early, w)
		}
	}
	grownBack := 0.0 // no sample before the restart: the 70 % alone
	if len(early) > 0 {
		sum := 0
		for _, w := range early[len(early)/2:] {
			sum += w.window
		}
		grownBack = 0.8 * float64(sum) / float64(len(early)-len(early)/2)
	}
	byShare := false // the pool halved at 70 % of the prompts, the window not yet back
	waitFor(func() bool {
		w, _ := stateWindow(root)
		byShare = float64(w) < grownBack
		return float64(w) >= grownBack || written() >= n*7/10
	})
	halveAt := time.Since(start)
	s.Resize(40000, 256)
	if err := <-done; err != nil {
		t.Fatalf("worker: %v\n%s", err, log.String())
	}
	end := time.Since(start)
	close(stop)
	tr := <-traceC
	checkOutput(t, root, "B1", n)
	before := meanWindow(tr, restartAt/2, restartAt)
	after := meanWindow(tr, halveAt+(end-halveAt)/2, end)
	t.Logf("window: %.0f before the restart, %.0f at the end with half the pool (halved at 70 %% of the prompts: %v)", before, after, byShare)
	if !strings.Contains(log.String(), "failed") && !strings.Contains(log.String(), "unavailable") {
		t.Errorf("the restart left no trace in the log:\n%s", log.String())
	}
	// grown back: to 0.8 of its level before the restart; where the pool
	// halved first (a loaded machine runs the prompts out before the
	// window is back), to twice the lowest it fell to
	dropped, regrown, low := false, false, 0
	for _, smp := range tr {
		if smp.at > restartAt && float64(smp.window) < 0.8*before {
			dropped = true
		}
		if dropped && smp.at < halveAt && (low == 0 || smp.window < low) {
			low = smp.window
		}
		if dropped && smp.at < halveAt && (float64(smp.window) >= 0.8*before || byShare && smp.window >= 2*low) {
			regrown = true
		}
	}
	if !dropped || !regrown {
		t.Errorf("after the restart the window should fall and grow back: dropped %v, regrown %v (before %.0f, lowest %d, pool halved at 70 %% of the prompts %v)", dropped, regrown, before, low, byShare)
	}
	if after >= 0.85*before {
		t.Errorf("half the pool, but the window stayed at %.0f (was %.0f)", after, before)
	}
}
