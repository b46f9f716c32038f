package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/vitals"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// BenchmarkWatcherIdlePoll: bytes and round trips of one watcher poll
// (counts, logs, worker.json, the worker's /proc entries, /metrics
// refused) of a root with a live worker when nothing changed. The proxy
// adds 10 ms each way, so one round trip is 20 ms (TestPollRoundTrips
// counts them, without a clock).
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
	url := "http://127.0.0.1:1" // refused: the worst common case, asked every poll
	// reader=fallback: no agent on the host (every poll one exec of
	// fallback.sh); reader=agent: the Go agent (the binary as worker_bin)
	for _, reader := range []string{"fallback", "agent"} {
		b.Run("reader="+reader, func(b *testing.B) {
			h, px := dialThroughProxy(b, s)
			o := Options{Host: "bench", Root: root, ServerURL: url, WorkerBin: filepath.Join(b.TempDir(), "none")}
			if reader == "agent" {
				o.WorkerBin = testbin.Path(b)
			}
			w := NewWatcher(h, o, nil)
			px.SetDelay(rtt / 2)
			for i := 0; i < 5; i++ {
				w.Poll(context.Background())
			}
			if s := w.Poll(context.Background()); s.Worker.PID != pid || s.Worker.State != "running" || !strings.HasPrefix(s.Connection.Reader, map[string]string{"fallback": "fallback", "agent": "go agent"}[reader]) {
				b.Fatalf("worker %+v, read by %q", s.Worker, s.Connection.Reader)
			}
			w0, start, n := h.Wire(), time.Now(), 0
			for b.Loop() {
				w.Poll(context.Background())
				n++
			}
			w1, el := h.Wire(), time.Since(start)
			b.ReportMetric(float64(w1.Sent+w1.Received-w0.Sent-w0.Received)/float64(n), "B/poll")
			b.ReportMetric(el.Seconds()/float64(n)/rtt.Seconds(), "RTTs/poll")
		})
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// dialThroughProxy connects to s through a loopback proxy that can delay
// the link (known_hosts rewritten for the proxy's port).
func dialThroughProxy(b *testing.B, s *sshdtest.Server) (*remote.SSH, *faultproxy.Proxy) {
	p := newProxied(b, s)
	b.Setenv("SSH_AUTH_SOCK", "")
	h := p.dial(b)
	b.Cleanup(func() { h.Close() })
	return h, p.px
}

// BenchmarkVitalsRead: bytes and round trips of one read of the host's
// vitals (the stand-in nvidia-smi with 8 GPUs on the sshd session's PATH,
// load, memory, the worker's /proc entries and df), through a proxy that
// adds 10 ms each way. The watcher makes one every 10 s at most, inside a
// poll's batch.
func BenchmarkVitalsRead(b *testing.B) {
	const rtt = 20 * time.Millisecond
	dir := b.TempDir()
	g, a := h100s(97)
	os.WriteFile(filepath.Join(dir, "gpus.csv"), []byte(g), 0o644)
	os.WriteFile(filepath.Join(dir, "apps.csv"), []byte(a), 0o644)
	os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\nd=$(dirname \"$0\")\ncase \"$*\" in *--query-gpu=*) cat \"$d/gpus.csv\";; *) cat \"$d/apps.csv\";; esac\n"), 0o755)
	s := sshdtest.Start(b, sshdtest.WithConfig("SetEnv PATH="+dir+":/usr/local/bin:/usr/bin:/bin"))
	root := b.TempDir()
	pid := fakeWorker(b, root)
	h, px := dialThroughProxy(b, s)
	w := NewWatcher(h, Options{Host: "bench", Root: root}, nil)
	px.SetDelay(rtt / 2)
	if res, err := w.h.Exec(context.Background(), w.vit.Argv(pid, true)...); err != nil {
		b.Fatalf("vitals: %v", err)
	} else if secs := parse.SplitVitals(string(res.Stdout)); secs["gpu"].Code != 0 || secs["df"].Code != 0 {
		b.Fatalf("vitals: %+v", secs)
	}
	paceVitals(w, -1, 0) // read at every call, the disk at a poll's pace
	w0, start, n := h.Wire(), time.Now(), 0
	for b.Loop() {
		_, disk := w.vit.Due(time.Now())
		w.vit.Read(context.Background(), w.h, pid, disk, nil)
		n++
	}
	w1, el := h.Wire(), time.Since(start)
	b.ReportMetric(float64(w1.Sent+w1.Received-w0.Sent-w0.Received)/float64(n), "B/read")
	b.ReportMetric(el.Seconds()/float64(n)/rtt.Seconds(), "RTTs/read")
	b.ReportMetric(float64(w1.Sent+w1.Received-w0.Sent-w0.Received)/float64(n)*3600/vitals.ReadGap.Seconds()/1e6, "MB/hour")
}
