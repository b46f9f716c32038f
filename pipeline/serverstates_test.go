package pipeline

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// The lines are those of testdata/logs/faults/lifecycle_2026.log (its
// README names each source), stamped after the serving log they follow.
const (
	sgServing = "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n" +
		"[2026-11-29 02:59:50 TP0] Decode batch, #running-req: 10, #token: 100, token usage: 0.30, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 1\n"
	vlServing = "(APIServer pid=4170) INFO:     Application startup complete.\n" +
		"(APIServer pid=4170) INFO 11-29 02:59:50 [loggers.py:273] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 500.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: 0.0%\n"
	vlStuck = "(APIServer pid=4170) INFO 11-29 03:00:%02d [loggers.py:273] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%%, Prefix cache hit rate: 0.0%%\n"
)

// serverAfter writes first, polls, appends then, and polls twice more (the
// log quiet in the last one), as a dashboard open through it sees it.
func serverAfter(t *testing.T, first, then string, o Options) snapshot.Snapshot {
	t.Helper()
	c := newClock()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
	log := filepath.Join(root, "logs", "sglang_inference.log")
	write(t, log, first)
	c.t = time.Now()
	must(t, os.Chtimes(log, c.t, c.t))
	w := localWatcher(t, root, c, o)
	poll(w)
	appendTo(t, log, then)
	c.advance(2 * time.Second)
	must(t, os.Chtimes(log, c.t, c.t))
	poll(w)
	c.advance(2 * time.Second)
	return poll(w)
}

func eventKinds(s snapshot.Snapshot) string {
	var kinds []string
	for _, e := range s.Events {
		kinds = append(kinds, e.Kind)
	}
	return strings.Join(kinds, " ")
}

// Every way a 2026 server dies, stops or hangs is a state with its reason
// and an event, through the watcher's one path (Snapshot: what the
// dashboard, status and the fleet show).
func TestEveryWayItDiesStopsOrHangs(t *testing.T) {
	t.Parallel()
	startup := "[2026-11-29 02:59:00 TP0] Load weight begin. avail mem=70.00 GB\n"
	cases := []struct {
		name, first, then string
		state             snapshot.ServerState
		event, reason     string
	}{
		{"running-phase SIGQUIT", sgServing, "[2026-11-29 03:00:01] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n", snapshot.ServerCrashed, "server_crash", "crash"},
		{"child crashed natively", sgServing, "[2026-11-29 03:00:01] Subprocess scheduler_0 (pid=7391) crashed with exit code -6. Triggering SIGQUIT for cleanup...\n", snapshot.ServerCrashed, "server_crash", "crash"},
		{"no live scheduler", sgServing, "[2026-11-29 03:00:01] No live scheduler processes found; skipping py-spy and CUDA coredump.\n", snapshot.ServerCrashed, "server_crash", "crash"},
		{"kill_process_tree", sgServing, "[2026-11-29 03:00:01] kill_process_tree called: parent_pid=71581, include_parent=True, pid=71581\n", snapshot.ServerCrashed, "server_crash", "crash"},
		{"scheduler died during initialization", startup, "Traceback (most recent call last):\n  File \"/sgl/python/sglang/srt/entrypoints/engine.py\", line 1277, in _wait_for_scheduler_ready\n    raise _scheduler_died_error(i, scheduler_procs[i])\nRuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.\n", snapshot.ServerCrashed, "server_crash", "crash"},
		{"graceful SIGTERM", sgServing, "[2026-11-29 03:00:01] SIGTERM received. signum=15 frame=None. Draining requests and shutting down...\n[2026-11-29 03:00:02] Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[].\n", snapshot.ServerStopped, "server_stop", "Draining"},
		{"SIGTERM and its teardown", sgServing, "[2026-11-29 03:00:01] SIGTERM received. signum=15 frame=None. Draining requests and shutting down...\n" +
			"[2026-11-29 03:00:03] Subprocess detokenizer (pid=12) crashed with exit code -15. Triggering SIGQUIT for cleanup...\n" +
			"[2026-11-29 03:00:03] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n" +
			"[2026-11-29 03:00:03] kill_process_tree called: parent_pid=59, include_parent=True, pid=59\n", snapshot.ServerStopped, "server_stop", "Draining"},
		{"NCCL watchdog", sgServing, "[rank0]:[E1129 03:00:01.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.\n", snapshot.ServerHung, "server_hang", "collective"},
		{"vLLM shm broadcast", vlServing, "(EngineCore_DP0 pid=413) INFO 11-29 03:00:01 [shm_broadcast.py:705] No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).\n", snapshot.ServerHung, "server_hang", "shared memory"},
		{"vLLM fatal error", vlServing, "(EngineCore_DP0 pid=413) ERROR 11-29 03:00:01 [core.py:710] EngineCore encountered a fatal error.\n", snapshot.ServerCrashed, "server_crash", "crash"},
		{"vLLM requests at 0 tok/s", vlServing, fmtLines(vlStuck, 0, 10, 20), snapshot.ServerHung, "server_hang", "0 tok/s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serverAfter(t, tc.first, tc.then, Options{})
			if s.Server.State != tc.state || !strings.Contains(eventKinds(s), tc.event) || !strings.Contains(s.Server.Reason, tc.reason) {
				t.Fatalf("state %q (reason %q), events %v; want %s (%q) and %s", s.Server.State, s.Server.Reason, eventKinds(s), tc.state, tc.reason, tc.event)
			}
			if strings.Contains(eventKinds(s), "server_crash") != (tc.state == snapshot.ServerCrashed) {
				t.Fatalf("events %v for a %s server", eventKinds(s), tc.state)
			}
		})
	}
}

func fmtLines(f string, secs ...int) string {
	var b strings.Builder
	for _, s := range secs {
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(f, "%02d", twoDigits(s)), "%%", "%"))
	}
	return b.String()
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }

// A hang ends when tokens flow again; a vLLM waiting for its workers while
// they compile (no ready yet) is starting, not hung.
func TestHangClearsAndStartupWaitIsNoHang(t *testing.T) {
	t.Parallel()
	s := serverAfter(t, vlServing, fmtLines(vlStuck, 0, 10, 20)+strings.Replace(vlServing[strings.Index(vlServing, "\n")+1:], "02:59:50", "03:00:30", 1), Options{})
	if s.Server.State != snapshot.ServerBusy {
		t.Fatalf("after progress: %+v", s.Server)
	}
	s = serverAfter(t, "(APIServer pid=1) INFO 11-29 02:59:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n",
		"(EngineCore pid=395) INFO 11-29 03:00:01 [shm_broadcast.py:705] No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).\n", Options{})
	if s.Server.State != snapshot.ServerStarting {
		t.Fatalf("while compiling: %q (%s)", s.Server.State, s.Server.Reason)
	}
}

// /health that does not answer (a server that accepts and says nothing)
// is a state with its reason and an event.
func TestHealthNotAnswering(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	t.Parallel()
	hold := make(chan struct{})
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r) // SGLang without --enable-metrics
			return
		}
		if asked.Add(1) == 1 {
			return // the first poll: it answers
		}
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hold); srv.Close() })
	s := serverAfter(t, sgServing, "[2026-11-29 03:00:01] INFO:     127.0.0.1:5000 - \"GET /health HTTP/1.1\" 200 OK\n", Options{ServerURL: srv.URL})
	if s.Server.State != snapshot.ServerUnhealthy || !strings.Contains(s.Server.Reason, "/health timed out") || !strings.Contains(eventKinds(s), "server_unhealthy") {
		t.Fatalf("state %q (reason %q), events %v", s.Server.State, s.Server.Reason, eventKinds(s))
	}
}

// An idle vLLM prints one all-zero line and goes quiet: with /health
// answering it is ready (idle), its figures stale with their age, not down.
func TestIdleVLLMIsReadyNotDown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	c := newClock()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
	log := filepath.Join(root, "logs", "sglang_inference.log")
	write(t, log, "(APIServer pid=4170) INFO:     Application startup complete.\n"+
		"(APIServer pid=4170) INFO 11-29 02:50:00 [loggers.py:273] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%\n")
	c.t = time.Now()
	old := c.t.Add(-10 * time.Minute)
	must(t, os.Chtimes(log, old, old))
	s := poll(localWatcher(t, root, c, Options{ServerURL: srv.URL}))
	if s.Server.State != snapshot.ServerReady || !s.Server.FiguresStale || s.Server.FiguresAgeSeconds == nil || *s.Server.FiguresAgeSeconds < 590 {
		t.Fatalf("server %+v", s.Server)
	}
}

// First sight of a server up for hours: a log of several MB whose ready
// line is at its very start, then decode lines. The first read starts far
// after the ready line; the decode lines alone say it serves.
func TestFirstSightOfALongLogIsServing(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
	log := filepath.Join(root, "logs", "sglang_inference.log")
	var b strings.Builder
	b.WriteString("[2026-11-28 20:00:00] The server is fired up and ready to roll!\n")
	start := time.Date(2026, 11, 28, 20, 0, 1, 0, time.UTC)
	for i := 0; b.Len() < 4<<20; i++ {
		ts := start.Add(time.Duration(i) * 500 * time.Millisecond)
		if i%20 == 0 {
			b.WriteString("[" + ts.Format("2006-01-02 15:04:05") + "] INFO:     127.0.0.1:5000 - \"POST /generate HTTP/1.1\" 200 OK\n")
		}
		b.WriteString("[" + ts.Format("2006-01-02 15:04:05") + " TP0] Decode batch, #running-req: 64, #token: 90000, token usage: 0.40, cuda graph: True, gen throughput (token/s): 1372.00, #queue-req: 3\n")
	}
	write(t, log, b.String())
	c.t = time.Now()
	must(t, os.Chtimes(log, c.t, c.t))
	s := poll(localWatcher(t, root, c, Options{}))
	if s.Server.State != snapshot.ServerBusy || s.Server.FiguresStale || s.Server.GenThroughput != 1372 || s.Server.RunningReqs != 64 {
		t.Fatalf("server %+v", s.Server)
	}
}

// Periodic figures older than a few of their own intervals are stale, with
// their age, however much else (warnings, access lines) grows the file.
func TestOldDecodeFiguresStayStaleWhileTheLogGrows(t *testing.T) {
	t.Parallel()
	var then strings.Builder
	for i := 0; i < 30; i++ {
		then.WriteString("[2026-11-29 03:1" + string(byte('0'+i/10)) + ":" + twoDigits(i*2%60) + "] INFO:     127.0.0.1:5000 - \"GET /health HTTP/1.1\" 200 OK\n")
	}
	s := serverAfter(t, sgServing, then.String(), Options{})
	if !s.Server.FiguresStale || s.Server.FiguresAgeSeconds == nil || *s.Server.FiguresAgeSeconds < 600 || s.Server.State == snapshot.ServerBusy {
		t.Fatalf("server %+v", s.Server)
	}
}

// Prefill is load: a PD prefill server (only prefill lines, its requests in
// #bootstrap-req / #inflight-req) and a PD decode server whose requests wait
// in #transfer-req are busy, not ready.
func TestPrefillAndPDQueuesAreLoad(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		"[2026-11-29 03:00:01 DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: 0.05, #running-req: 0, #queue-req: 0, #pending-token: 0, #bootstrap-req: 2, #inflight-req: 3, cuda graph: False, input throughput (token/s): 6000.00\n",
		"[2026-11-29 03:00:01 DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: 0.05, #running-req: 0, #queue-req: 1, #pending-token: 90000, cuda graph: False, input throughput (token/s): 180.00\n",
		"[2026-11-29 03:00:01 DP0 TP0] Decode batch, #running-req: 0, #token: 0, token usage: 0.00, pre-allocated usage: 0.10, #prealloc-req: 0, #transfer-req: 12, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 0.00, #queue-req: 0\n",
	} {
		s := serverAfter(t, "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n", line, Options{})
		if s.Server.State != snapshot.ServerBusy || s.Server.RunningReqs+s.Server.QueueReqs == 0 {
			t.Errorf("%s: server %+v", line, s.Server)
		}
	}
}

// The bracketed SGLANG_LOGGING_CONFIG_PATH format is read: ready, then busy.
func TestBracketedLogFormatIsRead(t *testing.T) {
	t.Parallel()
	s := serverAfter(t, "[2026-11-29 02:59:00,120][http_server.py:1500][INFO]: The server is fired up and ready to roll!\n",
		"[2026-11-29 03:00:01,003][scheduler_metrics_mixin.py:300][INFO]: Decode batch, #running-req: 5, #token: 800, token usage: 0.10, cuda graph: True, gen throughput (token/s): 250.00, #queue-req: 0\n", Options{})
	if s.Server.State != snapshot.ServerBusy || s.Server.GenThroughput != 250 {
		t.Fatalf("server %+v", s.Server)
	}
}

// A first read whose window holds only watchdog lines (the last batch line
// is further back) is a hang, not a server still starting; a vLLM waiting
// on compiling workers notes it once, however often it repeats.
func TestHangOnFirstSightAndOneStartupNote(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
	log := filepath.Join(root, "logs", "sglang_inference.log")
	write(t, log, "[rank0]:[E1129 02:59:01.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.\n")
	c.t = time.Now()
	must(t, os.Chtimes(log, c.t, c.t))
	if s := poll(localWatcher(t, root, c, Options{})); s.Server.State != snapshot.ServerHung {
		t.Fatalf("server %+v", s.Server)
	}
	shm := "(EngineCore pid=395) INFO 11-29 03:00:%02d [shm_broadcast.py:705] No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).\n"
	s := serverAfter(t, "(APIServer pid=1) INFO 11-29 02:59:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n", fmtLines(shm, 1, 2, 3), Options{})
	if n := strings.Count(eventKinds(s), "server_warning"); s.Server.State != snapshot.ServerStarting || n != 1 {
		t.Fatalf("state %q, %d warnings: %s", s.Server.State, n, eventKinds(s))
	}
}
