package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// Each fault line the servers really print gives its own state and event
// once it follows a healthy log (an idle vLLM is ready from uvicorn's line): a crash is crashed, a fault is unhealthy,
// a soft watchdog only a warning. The lines are the servers' own format
// strings (testdata/logs/faults/README.md names each source).
func TestFaultLinesGiveTheirStateAndEvent(t *testing.T) {
	t.Parallel()
	ready := "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n" +
		"[2026-11-29 02:59:50 TP0] Decode batch, #running-req: 10, #token: 100, token usage: 0.30, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 1\n"
	vllmReady := "(APIServer pid=4170) INFO:     Application startup complete.\n"
	cases := []struct {
		name, ready, line string
		state             snapshot.ServerState
		event             string
	}{
		{"scheduler exception", ready, "[2026-11-29 03:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n  File \"scheduler.py\", line 1\nRuntimeError: boom\n", snapshot.ServerCrashed, "server_crash"},
		{"hard watchdog", ready, "[2026-11-29 03:00:01 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n", snapshot.ServerCrashed, "server_crash"},
		{"health check", ready, "[2026-11-29 03:00:01] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 03:00:00. last_heartbeat time: 02:59:40\n", snapshot.ServerUnhealthy, "server_fault"},
		{"soft watchdog", ready, "[2026-11-29 03:00:01] TokenizerManager watchdog timeout (self.watchdog_timeout=300, self.soft=True)\n", snapshot.ServerBusy, "server_warning"},
		{"vLLM engine core", vllmReady, "(EngineCore_DP0 pid=413) ERROR 11-10 12:30:57 [core.py:710] EngineCore encountered a fatal error.\n", snapshot.ServerCrashed, "server_crash"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			root := t.TempDir()
			write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
			log := filepath.Join(root, "logs", "sglang_inference.log")
			write(t, log, tc.ready)
			c.t = time.Now()
			must(t, os.Chtimes(log, c.t, c.t))
			w := localWatcher(t, root, c, Options{})
			poll(w)
			appendTo(t, log, tc.line)
			c.advance(2 * time.Second)
			must(t, os.Chtimes(log, c.t, c.t))
			poll(w)
			c.advance(2 * time.Second)
			s := poll(w) // a traceback is whole once the log is quiet for a poll
			var kinds []string
			for _, e := range s.Events {
				kinds = append(kinds, e.Kind)
			}
			if s.Server.State != tc.state || !strings.Contains(strings.Join(kinds, " "), tc.event) {
				t.Fatalf("state %q (reason %q), events %v; want %s and %s", s.Server.State, s.Server.Reason, kinds, tc.state, tc.event)
			}
		})
	}
}

// A log that ends with the fault is what a dead server leaves behind: the
// first read of it (a one-shot status) already says so.
func TestFaultAtTheEndOfTheLogOnFirstSight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line  string
		state snapshot.ServerState
	}{
		{"[2026-11-29 03:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n", snapshot.ServerCrashed},
		{"[2026-11-29 03:00:01 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n", snapshot.ServerCrashed},
		{"(EngineCore_DP0 pid=77) ERROR 11-29 03:00:01 [core.py:710] EngineCore encountered a fatal error.\n", snapshot.ServerCrashed},
	} {
		c := newClock()
		root := t.TempDir()
		write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
		write(t, filepath.Join(root, "logs", "sglang_inference.log"), "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n"+
			"[2026-11-29 02:59:50 TP0] Decode batch, #running-req: 10, #token: 100, token usage: 0.30, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 1\n"+tc.line)
		s := poll(localWatcher(t, root, c, Options{}))
		if s.Server.State != tc.state || s.Server.LastCrash == "" || s.Server.RunningReqs != 0 || s.Server.GenThroughput != 0 {
			t.Errorf("%q: server %+v", tc.line, s.Server)
		}
	}
}

// worker.json may name a category discovery has not found (added and
// launched while the dashboard is open, or renamed since): no panic, and it
// is counted from the next poll on.
func TestWorkerJSONNamesAnUndiscoveredCategory(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "A", "prompts.jsonl"), prompts("A", 2))
	w := localWatcher(t, root, c, Options{})
	poll(w)
	write(t, filepath.Join(root, "prepared", "B", "prompts.jsonl"), prompts("B", 3))
	write(t, filepath.Join(root, "prepared", "B", "raw_responses.jsonl"), records("B", 0, 2))
	writeWorkerJSON(t, root, parse.WorkerState{PID: 1 << 22, UpdatedAt: c.t, State: parse.WorkerRunning, Category: "B",
		Categories: []parse.CategoryState{{Name: "A"}, {Name: "B"}, {Name: "gone"}}})
	c.advance(time.Second)
	poll(w) // must not panic
	c.advance(time.Second)
	s := poll(w)
	if b := catByName(t, s, "B"); b.Done != 2 {
		t.Fatalf("B: %+v", b)
	}
}
