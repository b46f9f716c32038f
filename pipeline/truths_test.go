package pipeline

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// A server that crashes under a running category: the row keeps running
// (the worker waits for it) but shows no rate and no ETA, and says why;
// the pipeline has no ETA either. Records flowing again bring the rate back.
func TestServerCrashBlanksTheRunningRow(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now().Truncate(time.Second)
	root, pid := writerRoot(t, c)
	start := c.now()
	workerOn(t, root, pid, c, start)
	slog := filepath.Join(root, "logs", "sglang_inference.log")
	write(t, slog, "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n")
	w := localWatcher(t, root, c, Options{StallAfter: 10 * time.Minute})
	raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
	poll(w)
	var s snapshot.Snapshot
	for i := 0; i < 40; i++ { // 30/min for 80 s
		c.advance(2 * time.Second)
		appendTo(t, raw, records("B2", i, 1))
		touch(t, raw, c.now())
		appendTo(t, slog, "[2026-11-29 02:59:50 TP0] Decode batch, #running-req: 10, #token: 100, token usage: 0.30, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 1\n")
		workerOn(t, root, pid, c, start)
		s = poll(w)
	}
	if b2 := catByName(t, s, "B2"); b2.State != snapshot.StateRunning || b2.RatePerMin <= 0 || b2.ETASeconds == nil {
		t.Fatalf("before the crash: %s %.1f/min ETA %v (server %s)", b2.State, b2.RatePerMin, b2.ETASeconds, s.Server.State)
	}
	appendTo(t, slog, "[2026-11-29 03:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n  File \"scheduler.py\", line 1\nRuntimeError: boom\n")
	for i := 0; i < 20; i++ { // the traceback is whole once the log is quiet; no record for 30 s
		c.advance(2 * time.Second)
		workerOn(t, root, pid, c, start)
		s = poll(w)
	}
	b2 := catByName(t, s, "B2")
	if s.Server.State != snapshot.ServerCrashed || b2.State != snapshot.StateRunning || b2.RatePerMin != 0 || b2.ETASeconds != nil || b2.TokPerSec != nil ||
		b2.Reason != "the server is crashed" || s.ETASeconds != nil {
		t.Fatalf("after the crash: server %s; B2 %s %.1f/min ETA %v (%q); pipeline ETA %v", s.Server.State, b2.State, b2.RatePerMin, b2.ETASeconds, b2.Reason, s.ETASeconds)
	}
	// worker.json says it waits for /health: that says it at once
	writeWorkerJSON(t, root, parse.WorkerState{PID: pid, State: parse.WorkerWaitingServer, Category: "B2", StartedAt: start,
		CategorySince: start, UpdatedAt: c.now(), Categories: []parse.CategoryState{
			{Name: "B2", Class: "LONG", Target: 2000, State: parse.CatRunning},
			{Name: "B3", Class: "SHORT", Target: 500, State: parse.CatPending},
		}})
	c.advance(2 * time.Second)
	s = poll(w)
	if b2 := catByName(t, s, "B2"); b2.State != snapshot.StateRunning || b2.ETASeconds != nil || b2.Reason != "the worker waits for the server" {
		t.Fatalf("waiting for the server: B2 %s ETA %v (%q)", b2.State, b2.ETASeconds, b2.Reason)
	}
}
