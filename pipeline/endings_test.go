package pipeline

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/synthwatch/synthwatch/pipeline/servers"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// The lines are those of testdata/logs/faults/round2_2026.log and
// lifecycle_2026.log (their README names each upstream source), stamped
// after the serving log they follow.
const (
	vlWorkerDied = "(EngineCore_DP0 pid=413) ERROR 11-29 03:00:01 [multiproc_executor.py:231] Worker proc VllmWorker-0 died unexpectedly, shutting down executor.\n" +
		"(EngineCore_DP0 pid=413) Process EngineCore_DP0:\n" +
		"(EngineCore_DP0 pid=413) Traceback (most recent call last):\n" +
		"(APIServer pid=4170) ERROR 11-29 03:00:02 [async_llm.py:546] AsyncLLM output_handler failed.\n" +
		"(APIServer pid=4170) ERROR 11-29 03:00:02 [async_llm.py:546] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
	uvicornShutdown = "(APIServer pid=4170) INFO:     Shutting down\n" +
		"(APIServer pid=4170) INFO:     Waiting for application shutdown.\n" +
		"(APIServer pid=4170) INFO:     Application shutdown complete.\n" +
		"(APIServer pid=4170) INFO:     Finished server process [4170]\n"
	vlLauncherStop = "(APIServer pid=4170) INFO 11-29 03:00:09 [launcher.py:110] Shutting down FastAPI HTTP server.\n"
	sgException    = "[2026-11-29 03:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n" +
		"  File \"/sgl/python/sglang/srt/managers/scheduler.py\", line 2700, in run_scheduler_process\n" +
		"RuntimeError: CUDA error: an illegal memory access was encountered\n"
	sgSigterm = "[2026-11-29 03:00:01] SIGTERM received. signum=15 frame=None. Draining requests and shutting down...\n"
)

// The ladder of endings (docs/SERVER-STATES.md): a fatal line followed by
// a shutdown is a crash; a stop is a stop only when nothing fatal precedes
// it; a stop's teardown stays a stop, a fatal error of its own after it is
// a crash; a new run's startup line ends either.
func TestEndingsByPrecedence(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, first, then string
		state             snapshot.ServerState
		stopEvent         bool
	}{
		{"rung 1: vLLM worker death, then uvicorn's shutdown", vlServing, vlWorkerDied + vlLauncherStop + uvicornShutdown, snapshot.ServerCrashed, false},
		{"rung 1: AsyncLLMEngine has failed, then shutdown", vlServing,
			"CRITICAL 11-29 03:00:01 [launcher.py:72] AsyncLLMEngine has failed, terminating server process\n" + uvicornShutdown, snapshot.ServerCrashed, false},
		{"rung 1: Ray worker death, then shutdown", vlServing,
			"(EngineCore_DP0 pid=413) ERROR 11-29 03:00:01 [ray_executor_v2.py:464] RayWorkerProc rank=[3] died unexpectedly, shutting down executor.\n" + uvicornShutdown, snapshot.ServerCrashed, false},
		{"rung 1: SGLang scheduler crash, then SIGTERM and uvicorn", sgServing,
			sgException + "[2026-11-29 03:00:02] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n" + sgSigterm +
				"[2026-11-29 03:00:03] INFO:     Shutting down\n", snapshot.ServerCrashed, false},
		{"rung 2: a stop with nothing fatal before it", vlServing, vlLauncherStop + uvicornShutdown, snapshot.ServerStopped, true},
		{"rung 2: a stop's teardown stays a stop", sgServing, sgSigterm +
			"[2026-11-29 03:00:03] Subprocess detokenizer (pid=12) crashed with exit code -15. Triggering SIGQUIT for cleanup...\n" +
			"[2026-11-29 03:00:03] kill_process_tree called: parent_pid=59, include_parent=True, pid=59\n", snapshot.ServerStopped, true},
		{"rung 2: a fatal error of its own after a stop is a crash", sgServing, sgSigterm + sgException, snapshot.ServerCrashed, true},
		{"rung 3: a new run's startup ends a crash", vlServing, vlWorkerDied + uvicornShutdown +
			"(EngineCore_DP0 pid=199) INFO 11-29 03:10:20 [core.py:109] Initializing a V1 LLM engine (v0.20.2) with config: model='m'\n", snapshot.ServerStarting, false},
		{"rung 3: a new run's startup ends a stop", sgServing, sgSigterm +
			"[2026-11-29 03:10:00 TP0] Load weight begin. avail mem=70.00 GB\n", snapshot.ServerStarting, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serverAfter(t, tc.first, tc.then, Options{})
			ev := eventKinds(s)
			if s.Server.State != tc.state || strings.Contains(ev, "server_stop") != tc.stopEvent {
				t.Fatalf("state %q (reason %q), events %v; want %s, a stop event %v", s.Server.State, s.Server.Reason, ev, tc.state, tc.stopEvent)
			}
			if tc.state == snapshot.ServerCrashed && (s.Server.LastCrash == "" || strings.Contains(s.Server.Reason, "stopped on request")) {
				t.Fatalf("crash %q, reason %q", s.Server.LastCrash, s.Server.Reason)
			}
			if s.Server.Source != "" || s.Server.LastBatch != nil {
				t.Fatalf("an ended or restarting server shows figures: %+v", s.Server)
			}
		})
	}
}

// healthOnly answers /health and has no /metrics (SGLang without
// --enable-metrics).
func healthOnly(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// sgDecodeRun is SGLang decoding fast (several lines a second, one stamp
// per second) from 02:59:50 to 02:59:55, the last figure 930 tok/s, after
// the prefill line that took in its last request at 02:59:49, 6 s before
// the last decode line (as real logs have it: a prefill line with
// #new-seq > 0 is not the last batch line of a run).
func sgDecodeRun() string {
	var b strings.Builder
	b.WriteString("[2026-11-29 02:59:00] The server is fired up and ready to roll!\n")
	b.WriteString(sgPrefillLine)
	for sec := 50; sec <= 55; sec++ {
		for i := 0; i < 5; i++ {
			b.WriteString("[2026-11-29 02:59:" + twoDigits(sec) + " TP0] Decode batch, #running-req: 24, #token: 9000, token usage: 0.30, cuda graph: True, gen throughput (token/s): 930.00, #queue-req: 0\n")
		}
	}
	return b.String()
}

// sgPrefillLine is SGLang's prefill line (scheduler_components/
// metrics_reporter.py @ c9cbe8f2, log_prefill_stats) taking in one request.
const sgPrefillLine = "[2026-11-29 02:59:49 TP0] Prefill batch, #new-seq: 1, #new-token: 812, #cached-token: 3072, token usage: 0.29, #running-req: 23, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 4210.00\n"

func accessLines(from, to int, path string) string {
	var b strings.Builder
	for sec := from; sec <= to; sec++ {
		b.WriteString("[2026-11-29 03:00:" + twoDigits(sec) + "] INFO:     127.0.0.1:5000 - \"" + path + " HTTP/1.1\" 200 OK\n")
	}
	return b.String()
}

// Idle is a state with evidence: no batch line for a few of its own
// intervals while /health answers and only health checks arrive. The last
// batch's figures are shown as that, with their time and age, not as now's.
func TestIdleWithLastBatch(t *testing.T) {
	t.Parallel()
	url := healthOnly(t)
	s := serverAfter(t, sgDecodeRun(), accessLines(0, 20, "GET /health"), Options{ServerURL: url})
	v := s.Server
	lb := v.LastBatch
	if v.State != snapshot.ServerReady || v.GenThroughput != 0 || v.RunningReqs != 0 || lb == nil || lb.GenThroughput != 930 || lb.RunningReqs != 24 ||
		lb.At == nil || lb.At.Format("15:04:05") != "02:59:55" || lb.AgeSeconds < 20 {
		t.Fatalf("server %+v, last batch %+v", v, lb)
	}
	// a minute of health checks only (the prefill line before the last
	// decode line no longer holds the run open): idle, the last batch aged
	if s = serverAfter(t, sgDecodeRun(), accessLines(0, 59, "GET /health"), Options{ServerURL: url}); s.Server.State != snapshot.ServerReady ||
		s.Server.RunningReqs != 0 || s.Server.LastBatch == nil || s.Server.LastBatch.AgeSeconds < 59 {
		t.Fatalf("after 59 s of health checks: %+v, last batch %+v", s.Server, s.Server.LastBatch)
	}
	// the last requests' completions right after the last decode line, then
	// only health checks: idle (the review's F5)
	done := "[2026-11-29 02:59:55] INFO:     127.0.0.1:5000 - \"POST /generate HTTP/1.1\" 200 OK\n" +
		"[2026-11-29 02:59:56] INFO:     127.0.0.1:5001 - \"POST /generate HTTP/1.1\" 200 OK\n"
	if s = serverAfter(t, sgDecodeRun()+done, accessLines(0, 20, "GET /health"), Options{ServerURL: url}); s.Server.State != snapshot.ServerReady || s.Server.LastBatch == nil {
		t.Fatalf("after the last completions: %+v", s.Server)
	}
	// requests completing long after the last line ran without one: no evidence of idleness yet
	s = serverAfter(t, sgDecodeRun(), accessLines(0, 20, "POST /generate"), Options{ServerURL: url})
	if s.Server.State != snapshot.ServerBusy || s.Server.LastBatch != nil {
		t.Fatalf("with requests arriving: %+v", s.Server)
	}
}

// A vLLM V1 restart appended to a long log, nothing listening yet: the
// old run's figures end with its startup lines.
func TestRestartInAnAppendedLogIsStarting(t *testing.T) {
	t.Parallel()
	var old strings.Builder
	old.WriteString(vlServing)
	for m := 0; m < 50; m++ {
		old.WriteString(strings.Replace(vlServing[strings.Index(vlServing, "\n")+1:], "02:59:50", "01:"+twoDigits(m)+":00", 1))
	}
	restart := "(EngineCore_DP0 pid=199) INFO 11-29 03:00:20 [core.py:109] Initializing a V1 LLM engine (v0.20.2) with config: model='m', speculative_config=None\n" +
		"(EngineCore_DP0 pid=199) INFO 11-29 03:00:41 [gpu_model_runner.py:2653] Model loading took 15.2 GiB and 20.1 seconds\n" +
		"(EngineCore_DP0 pid=199) INFO 11-29 03:00:55 [backends.py:548] Dynamo bytecode transform time: 7.42 s\n"
	s := serverAfter(t, old.String(), restart, Options{})
	if s.Server.State != snapshot.ServerStarting || s.Server.Source != "" || s.Server.LastBatch != nil {
		t.Fatalf("server %+v", s.Server)
	}
	// today's SGLang starts a run with server_args={…} (engine.py @ 001067ff:
	// resolved_dict(), no longer ServerArgs(…)): the old run's figures end there
	s = serverAfter(t, sgServing, "[2026-11-29 03:00:20] server_args={'model_path': 'm', 'tp_size': 8, 'port': 30000}\n", Options{})
	if s.Server.State != snapshot.ServerStarting || s.Server.Source != "" {
		t.Fatalf("SGLang restart: %+v", s.Server)
	}
}

// A prefill-only server chunk-prefilling one long prompt (#new-seq 1,
// #running-req 0, lines tens of seconds apart) is busy.
func TestChunkedPrefillOfOnePromptIsBusy(t *testing.T) {
	t.Parallel()
	chunk := "[2026-11-29 03:00:%02d DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: 0.05, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 410.00\n"
	s := serverAfter(t, "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n"+fmtLines(chunk, 0, 30)+accessLines(31, 55, "GET /health"),
		"", Options{ServerURL: healthOnly(t)})
	if s.Server.State != snapshot.ServerBusy || s.Server.RunningReqs != 1 {
		t.Fatalf("server %+v", s.Server)
	}
}

// A prefill-only (PD prefill) server that answered each short request once
// it was prefilled, then only health checks: idle after a few of its
// lines' intervals, not 90 s; the last batch shown with its age.
func TestPrefillOnlyServerGoesIdle(t *testing.T) {
	t.Parallel()
	line := "[2026-11-29 02:59:%02d DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 900, #cached-token: 100, token usage: 0.02, #running-req: 0, #queue-req: 0, #bootstrap-req: 0, #inflight-req: 0, input throughput (token/s): 900.00\n" +
		"[2026-11-29 02:59:%02d] INFO:     127.0.0.1:5000 - \"POST /generate HTTP/1.1\" 200 OK\n"
	s := serverAfter(t, "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n"+fmtLines(line, 40, 41, 42, 43, 44, 45),
		accessLines(0, 20, "GET /health"), Options{ServerURL: healthOnly(t)})
	if v := s.Server; v.State != snapshot.ServerReady || v.RunningReqs != 0 || v.LastBatch == nil || v.LastBatch.RunningReqs != 1 {
		t.Fatalf("server %+v, last batch %+v", v, v.LastBatch)
	}
}

// Golden judgements, through the watcher's one path: an idle server with
// its last batch's age, and a vLLM crash that uvicorn's stop followed.
// testdata/TestGoldenServerEndings/NAME.golden; -update rewrites them.
func TestGoldenServerEndings(t *testing.T) {
	t.Parallel()
	url := healthOnly(t)
	for name, s := range map[string]snapshot.Snapshot{
		"idle_last_batch":          serverAfter(t, sgDecodeRun(), accessLines(0, 20, "GET /health"), Options{ServerURL: url}),
		"crash_then_stop":          serverAfter(t, vlServing, vlWorkerDied+vlLauncherStop+uvicornShutdown, Options{}),
		"stop_with_nothing_before": serverAfter(t, vlServing, vlLauncherStop+uvicornShutdown, Options{}),
	} {
		t.Run(name, func(t *testing.T) {
			v := s.Server
			if v.LastBatch != nil && v.LastBatch.At != nil {
				at := time.Date(v.LastBatch.At.Year(), v.LastBatch.At.Month(), v.LastBatch.At.Day(), v.LastBatch.At.Hour(),
					v.LastBatch.At.Minute(), v.LastBatch.At.Second(), 0, time.UTC) // the host's clock, whatever this machine's zone
				v.LastBatch.At = &at
			}
			shown := struct {
				State     snapshot.ServerState `json:"state"`
				Reason    string               `json:"reason"`
				Shown     string               `json:"shown"`
				Gen       float64              `json:"gen_throughput_tok_s"`
				Running   int                  `json:"running_reqs"`
				Source    string               `json:"source"`
				Stale     bool                 `json:"figures_stale"`
				LastBatch *snapshot.LastBatch  `json:"last_batch"`
				LastCrash string               `json:"last_crash"`
				Events    []string             `json:"events"`
			}{v.State, strings.ReplaceAll(v.Reason, url, "URL"), snapshot.IdleText(v), v.GenThroughput, v.RunningReqs, v.Source, v.FiguresStale, v.LastBatch, v.LastCrash, nil}
			for _, e := range s.Events {
				if strings.HasPrefix(e.Kind, "server_") {
					shown.Events = append(shown.Events, e.Kind+": "+e.Text)
				}
			}
			b, err := json.MarshalIndent(shown, "", "  ")
			must(t, err)
			golden.RequireEqual(t, append(b, '\n'))
		})
	}
}

// smg's 2026 health lines (testdata/router/smg_f8daa883_health.log, text
// and --json-log, the URL a field in "Health probe failed") raise the
// replica alert, and the replica the gateway calls unhealthy is a DOWN row
// though its own /health answers.
func TestGatewayUnhealthyReplicaIsADownRow(t *testing.T) {
	t.Parallel()
	a, b := healthOnly(t), healthOnly(t)
	// the gateway's /workers: A's load 5 in the list, or (the metrics
	// style) no load, so A's count can only come from the series
	gateway := func(load string) string {
		gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/workers":
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"workers":[{"url":"` + a + `","model_id":"m","worker_type":"regular"` + load + `},{"url":"` + b + `","model_id":"m","worker_type":"regular"}],"total":2}`))
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(gw.Close)
		return gw.URL
	}
	withLoad, noLoad := gateway(`,"load":5`), gateway("")
	// the gateway's Prometheus listener: smg_worker_* per worker
	// (model_gateway/src/observability/metrics.rs @ f8daa883); B's breaker
	// open, A with 7 requests active
	gwMetrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("# TYPE smg_worker_cb_state gauge\nsmg_worker_cb_state{worker=\"" + a + "\"} 0\nsmg_worker_cb_state{worker=\"" + b + "\"} 1\n" +
			"# TYPE smg_worker_requests_active gauge\nsmg_worker_requests_active{worker=\"" + a + "\"} 7\n"))
	}))
	t.Cleanup(gwMetrics.Close)
	data, err := os.ReadFile(filepath.Join("..", "testdata", "router", "smg_f8daa883_health.log"))
	must(t, err)
	for _, style := range []string{"text", "json", "metrics"} {
		t.Run(style, func(t *testing.T) {
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if style != "metrics" && strings.HasPrefix(l, "{") == (style == "json") && strings.Contains(l, "10.0.0.2") {
					lines = append(lines, strings.ReplaceAll(l, "http://10.0.0.2:30000", b))
				}
			}
			root := t.TempDir()
			write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
			write(t, filepath.Join(root, "logs", "router.log"), "")
			c := newClock()
			c.t = time.Now()
			met, gw, running := closedURL(t), withLoad, 5
			if style == "metrics" {
				met, gw, running = gwMetrics.URL, noLoad, 7
			}
			w := localWatcher(t, root, c, Options{Servers: []servers.Spec{{URL: gw, Router: true, Metrics: met, Log: "logs/router.log"}}})
			poll(w)
			appendTo(t, filepath.Join(root, "logs", "router.log"), strings.Join(lines, "\n")+"\n")
			c.advance(2 * time.Second)
			poll(w) // the replicas are asked once the list named them
			c.advance(2 * time.Second)
			s := poll(w)
			var alert bool
			for _, e := range s.Events {
				alert = alert || e.Kind == "replica_unhealthy" && strings.Contains(e.Text, b)
			}
			var rowA, rowB snapshot.ReplicaRow
			for _, r := range s.Server.Rows {
				switch r.Name {
				case strings.TrimPrefix(a, "http://"):
					rowA = r
				case strings.TrimPrefix(b, "http://"):
					rowB = r
				}
			}
			if style == "metrics" {
				alert = true // no log line: the series alone
			}
			if !alert || rowB.State != snapshot.RowDown || rowA.State != snapshot.RowUp || rowA.Source != "gateway" || rowA.RunningReqs != running || !strings.Contains(rowB.Reason, "gateway") {
				t.Fatalf("alert %v, rows %+v, events %v", alert, s.Server.Rows, eventKinds(s))
			}
		})
	}
}

// smg's retry lines (testdata/router/smg_retry.log: retry.rs's "Retry
// backoff" and pd_router.rs's "PD retry attempt", text and --json-log)
// each give a router_retry event, and retries alone make no replica
// unhealthy.
func TestGatewayRetryEvents(t *testing.T) {
	t.Parallel()
	a := healthOnly(t)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/workers" {
			_, _ = w.Write([]byte(`{"workers":[{"url":"` + a + `","model_id":"m","worker_type":"regular","load":2}],"total":1}`))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(gw.Close)
	data, err := os.ReadFile(filepath.Join("..", "testdata", "router", "smg_retry.log"))
	must(t, err)
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
	write(t, filepath.Join(root, "logs", "router.log"), "")
	c := newClock()
	c.t = time.Now()
	w := localWatcher(t, root, c, Options{Servers: []servers.Spec{{URL: gw.URL, Router: true, Metrics: closedURL(t), Log: "logs/router.log"}}})
	poll(w)
	appendTo(t, filepath.Join(root, "logs", "router.log"), string(data))
	c.advance(2 * time.Second)
	s := poll(w)
	var retries []string
	for _, e := range s.Events {
		switch e.Kind {
		case "router_retry":
			retries = append(retries, e.Text)
		case "replica_unhealthy":
			t.Errorf("a retry made a replica unhealthy: %s", e.Text)
		}
	}
	joined := strings.Join(retries, "\n")
	if len(retries) != 4 || strings.Count(joined, "Retry backoff") != 2 || strings.Count(joined, "PD retry attempt") != 2 {
		t.Fatalf("router_retry events %q; all events %v", retries, eventKinds(s))
	}
}

// A one-shot status of a busy vLLM (one /metrics sample; vLLM has no
// throughput gauge, its token counter needs two) gives an estimate, said
// to be one, not 0 tok/s; its spec-decode counters give the lifetime
// acceptance on that first poll. Series names: vllm/v1/metrics/loggers.py
// @ a6f0308c (PrometheusStatLogger), vllm/v1/spec_decode/metrics.py @ 016a8587
// (SpecDecodingProm: vllm:spec_decode_num_drafts, _num_draft_tokens,
// _num_accepted_tokens, counters: _total on the wire).
func TestOneSampleOfABusyVLLM(t *testing.T) {
	t.Parallel()
	exposition := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 12
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 3
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.42
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 91234
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{engine="0",model_name="m",le="0.01"} 0
vllm:inter_token_latency_seconds_bucket{engine="0",model_name="m",le="0.025"} 900
vllm:inter_token_latency_seconds_bucket{engine="0",model_name="m",le="+Inf"} 1000
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} 20
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 1000
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 300
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 210
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(exposition))
	}))
	t.Cleanup(srv.Close)
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
	c := newClock()
	s := poll(localWatcher(t, root, c, Options{ServerURL: srv.URL}))
	v := s.Server
	if v.State != snapshot.ServerBusy || v.RunningReqs != 12 || v.GenThroughput != 600 || !strings.Contains(v.GenThroughputNote, "one sample") {
		t.Fatalf("server %+v", v)
	}
	if v.Spec == nil || v.Spec.Scope != "lifetime" || v.Spec.AcceptRate == nil || *v.Spec.AcceptRate != 0.7 || v.Spec.AcceptLength == nil || *v.Spec.AcceptLength != 3.1 {
		t.Fatalf("spec %+v", v.Spec)
	}
}

// `docker compose logs` output (every line behind "SERVICE-1  | ", with
// and without -t) reads as the server it is: busy, 29 running, 108
// waiting, not an idle server of zeros.
func TestComposeLogIsRead(t *testing.T) {
	t.Parallel()
	stats := "(APIServer pid=15) INFO 11-29 03:00:01 [loggers.py:257] Engine 000: Avg prompt throughput: 812.4 tokens/s, Avg generation throughput: 930.2 tokens/s, Running: 29 reqs, Waiting: 108 reqs, GPU KV cache usage: 91.3%, Prefix cache hit rate: 12.0%\n"
	for name, prefix := range map[string]string{"compose": "vllm-1  | ", "compose -t": "vllm-1  | 2026-11-29T03:00:01.123456789Z "} {
		s := serverAfter(t, wrapAll(vlServing, func(l string) string { return prefix + l }), prefix+stats, Options{})
		if v := s.Server; v.State != snapshot.ServerBusy || v.RunningReqs != 29 || v.QueueReqs != 108 || v.GenThroughput != 930.2 {
			t.Errorf("%s: %+v", name, v)
		}
	}
}
