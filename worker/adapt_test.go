package worker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// watchWindow samples worker.json's window and the server's gauges until
// stop is closed.
type windowWatch struct {
	mu                  sync.Mutex
	maxWindow, maxQueue int
	maxRunning          float64
	reasons             map[string]bool
}

func (ww *windowWatch) run(t testing.TB, root string, s *sim.Server, stop <-chan struct{}) {
	ww.reasons = map[string]bool{}
	for {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		data, err := os.ReadFile(filepath.Join(root, "run", "worker.json"))
		if err != nil {
			continue
		}
		st, err := parse.ParseWorkerState(data)
		if err != nil || len(st.Categories) == 0 {
			continue
		}
		m := simMetrics(t, s)
		ww.mu.Lock()
		c := st.Categories[0]
		ww.maxWindow = max(ww.maxWindow, c.Window)
		ww.maxQueue = max(ww.maxQueue, int(m.QueueReqs.V))
		ww.maxRunning = max(ww.maxRunning, m.RunningReqs.V)
		ww.reasons[c.WindowReason] = true
		ww.mu.Unlock()
	}
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
	var ww windowWatch
	done := make(chan struct{})
	go func() { ww.run(t, root, s, stop); close(done) }()
	err := Run(context.Background(), Config{Root: root, Server: s.URL(), MaxConcurrency: 120, AdaptEvery: 100 * time.Millisecond}, &log)
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("worker: %v\n%s", err, log.String())
	}
	checkOutput(t, root, "B1", n)
	if ww.maxWindow <= startWindow || ww.maxWindow > 120 {
		t.Errorf("window peaked at %d (start %d, cap 120)", ww.maxWindow, startWindow)
	}
	if ww.maxQueue == 0 {
		t.Errorf("the server never held a queue: never full (max running %.0f, max window %d)", ww.maxRunning, ww.maxWindow)
	}
	if !ww.reasons["start"] && len(ww.reasons) < 2 {
		t.Errorf("reasons seen: %v", ww.reasons)
	}
	grew := false
	for r := range ww.reasons {
		grew = grew || strings.HasPrefix(r, "↑ queue empty; KV ")
	}
	if !grew {
		t.Errorf("no growth reason in worker.json: %v", ww.reasons)
	}
	t.Logf("window peak %d, server queue peak %d, running peak %.0f, reasons %v\n%s", ww.maxWindow, ww.maxQueue, ww.maxRunning, ww.reasons, log.String())
	if !strings.Contains(log.String(), "B1: adaptive window from 8 to at most 120") || !strings.Contains(log.String(), " window ") {
		t.Errorf("log says nothing of the window:\n%s", log.String())
	}
	for _, line := range strings.Split(log.String(), "\n") {
		if wl := parse.ParseWorkerLine(line); wl.Kind == parse.WProgress && !strings.Contains(line, " window ") {
			t.Errorf("a progress line without the window: %q", line)
		}
	}
}
