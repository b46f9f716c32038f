package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// BenchmarkWatcherIdlePoll: bytes and round trips of one watcher poll
// (counts, logs, worker.json, the worker's /proc entries, /metrics
// refused) of a root with a live worker when nothing changed. The proxy
// adds 10 ms each way, so one round trip is 20 ms.
func BenchmarkWatcherIdlePoll(b *testing.B) {
	const rtt = 20 * time.Millisecond
	s := sshdtest.Start(b)
	root := b.TempDir()
	for _, n := range []string{"B1", "B2", "B3", "B4"} {
		d := filepath.Join(root, "prepared", n)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte(prompts(n, 100)), 0o644)
		os.WriteFile(filepath.Join(d, "raw_responses.jsonl"), []byte(records(n, 0, 50)), 0o644)
	}
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte(strings.Repeat("50/100 (0 err) 1.0 req/s avg_comp=200tok ETA=1m\n", 50)), 0o644)
	os.WriteFile(filepath.Join(root, "logs", "sglang_inference.log"), []byte("[2026-01-01 00:00:00] The server is fired up and ready to roll!\n"), 0o644)
	pid := fakeWorker(b, root)
	st := parse.WorkerState{Schema: 1, PID: pid, State: parse.WorkerRunning, Category: "B2", UpdatedAt: time.Now()}
	data, _ := jsonMarshal(st)
	os.MkdirAll(filepath.Join(root, "run"), 0o755)
	os.WriteFile(filepath.Join(root, "run", "worker.json"), data, 0o644)
	px, err := faultproxy.Start(s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(px.Close)
	kh := filepath.Join(b.TempDir(), "kh")
	khb, _ := os.ReadFile(s.KnownHosts)
	os.WriteFile(kh, []byte(strings.Replace(string(khb), s.Addr()[len("127.0.0.1:"):], px.Addr()[len("127.0.0.1:"):], 1)), 0o644)
	b.Setenv("SSH_AUTH_SOCK", "")
	h, err := remote.Dial(context.Background(), remote.Options{Target: s.User + "@" + px.Addr(), Identities: []string{s.KeyPath}, Home: b.TempDir(),
		Opts: []string{"UserKnownHostsFile=" + kh, "StrictHostKeyChecking=yes"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	url := "http://127.0.0.1:1" // refused: the worst common case, asked every poll
	w := NewWatcher(h, Options{Host: "bench", Root: root, ServerURL: url}, nil)
	px.SetDelay(rtt / 2)
	for i := 0; i < 5; i++ {
		w.Poll(context.Background())
	}
	if s := w.Poll(context.Background()); s.Worker.PID != pid || s.Worker.State != "running" {
		b.Fatalf("worker %+v", s.Worker)
	}
	w0, start, n := h.Wire(), time.Now(), 0
	for b.Loop() {
		w.Poll(context.Background())
		n++
	}
	w1, el := h.Wire(), time.Since(start)
	b.ReportMetric(float64(w1.Sent+w1.Received-w0.Sent-w0.Received)/float64(n), "B/poll")
	b.ReportMetric(el.Seconds()/float64(n)/rtt.Seconds(), "RTTs/poll")
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
