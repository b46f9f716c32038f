package parse

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Every batch-line variant of reference/sglang.md §2, verbatim in shape.
func TestParseBatchVariants(t *testing.T) {
	type want struct {
		phase   Phase
		running int
		queue   int
		usage   float64 // -1: absent
		gen     float64 // -1: absent
		hitPct  float64 // -1: absent
		iter    int64
		gpu     int
		ranks   Ranks
		ms      bool
		hasDate bool
	}
	tp0 := NoRanks
	tp0.TP = 0
	cases := []struct {
		name string
		line string
		want want
	}{
		{"2026 decode (metrics_reporter, #cached-token)",
			"[2026-02-03 14:07:00 TP0] Decode batch, #running-req: 72, #cached-token: 0, #token: 300112, token usage: 0.29, cuda graph: True, gen throughput (token/s): 930.10, #queue-req: 0",
			want{Decode, 72, 0, 0.29, 930.10, -1, -1, -1, tp0, false, true}},
		{"2026 decode with iter and ms, DP/TP/EP tags",
			"[2026-02-03 14:07:00.123 DP3 TP3 EP3] Decode batch [12345], #running-req: 9, #token: 100, token usage: 0.10, accept len: 2.10, accept rate: 0.70, cuda graph: True, gen throughput (token/s): 88.00, #queue-req: 4, est. decode TFLOPS/s (per GPU): 1.20, fwd occupancy: 97.50%",
			want{Decode, 9, 4, 0.10, 88, -1, 12345, -1, Ranks{DP: 3, TP: 3, EP: 3, PP: -1, AttnCP: -1, MoeDP: -1}, true, true}},
		{"2026 prefill with pending-token, graph before input throughput",
			"[2026-02-03 14:06:34 TP0] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 0.00",
			want{Prefill, 0, 0, 0, -1, -1, -1, -1, tp0, false, true}},
		{"early 2026 decode without #cached-token",
			"[2026-01-10 08:00:00 TP0] Decode batch, #running-req: 5, #token: 50, token usage: 0.01, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0",
			want{Decode, 5, 0, 0.01, 10, -1, -1, -1, tp0, false, true}},
		{"Dec 2025 prefill, input throughput before graph",
			"[2026-02-09 10:00:00] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, input throughput (token/s): 0.00, cuda graph: False",
			want{Prefill, 0, 0, 0, -1, -1, -1, -1, NoRanks, false, true}},
		{"v0.5.2 decode with trailing comma",
			"[2025-10-01 10:00:00 TP0] Decode batch, #running-req: 233, #token: 370959, token usage: 0.82, cuda graph: True, gen throughput (token/s): 4594.01, #queue-req: 317, ",
			want{Decode, 233, 317, 0.82, 4594.01, -1, -1, -1, tp0, false, true}},
		{"v0.5.2 prefill with trailing comma, hybrid SWA",
			"[2025-10-01 10:00:00 TP0] Prefill batch, #new-seq: 2, #new-token: 100, #cached-token: 10, full token usage: 0.30, swa token usage: 0.20, #running-req: 3, #queue-req: 1, ",
			want{Prefill, 3, 1, 0.30, -1, -1, -1, -1, tp0, false, true}},
		{"v0.4.10 batch. with trailing comma stripped by a collector",
			"[2025-08-08 12:00:00] Decode batch. #running-req: 1, #token: 47, token usage: 0.00, cuda graph: True, gen throughput (token/s): 2.18, #queue-req: 0,",
			want{Decode, 1, 0, 0, 2.18, -1, -1, -1, NoRanks, false, true}},
		{"v0.4.10 prefill batch. trailing",
			"[2025-08-08 12:00:00] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ",
			want{Prefill, 0, 0, 0, -1, -1, -1, -1, NoRanks, false, true}},
		{"v0.4.6 tuning doc line",
			"[2025-05-01 10:00:00 DP7 TP7] Decode batch. #running-req: 233, #token: 370959, token usage: 0.82, cuda graph: True, gen throughput (token/s): 4594.01, #queue-req: 317",
			want{Decode, 233, 317, 0.82, 4594.01, -1, -1, -1, Ranks{DP: 7, TP: 7, PP: -1, EP: -1, AttnCP: -1, MoeDP: -1}, false, true}},
		{"v0.4.2 decode without cuda graph, trailing comma",
			"[2025-02-17 05:27:25 TP0] Decode batch. #running-req: 12, #token: 1200, token usage: 0.05, gen throughput (token/s): 300.50, #queue-req: 0, ",
			want{Decode, 12, 0, 0.05, 300.50, -1, -1, -1, tp0, false, true}},
		{"v0.3 prefill with cache hit rate percent",
			"[2024-10-01 10:00:00 TP0] Prefill batch. #new-seq: 1, #new-token: 32, #cached-token: 480, cache hit rate: 93.75%, token usage: 0.01, #running-req: 0, #queue-req: 0",
			want{Prefill, 0, 0, 0.01, -1, 93.75, -1, -1, tp0, false, true}},
		{"v0.3 mixed-chunk prefill",
			"[2024-10-01 10:00:00] Prefill batch(mixed #running-req: 3). #new-seq: 1, #new-token: 32, #cached-token: 0, cache hit rate: 0.00%, token usage: 0.01, #running-req: 3, #queue-req: 0",
			want{Prefill, 3, 0, 0.01, -1, 0, -1, -1, NoRanks, false, true}},
		{"v0.1 gpu_id decode, time-only prefix",
			"[10:00:00] [gpu_id=0] Decode batch. #running-req: 4, #token: 900, token usage: 0.02, gen throughput (token/s): 120.00, #queue-req: 0",
			want{Decode, 4, 0, 0.02, 120, -1, -1, 0, NoRanks, false, false}},
		{"v0.1 gpu_id prefill",
			"[10:00:00 TP0] [gpu_id=0] Prefill batch. #new-seq: 1, #new-token: 10, #cached-token: 0, cache hit rate: 0.00%, #running-req: 0, #queue-req: 0",
			want{Prefill, 0, 0, -1, -1, 0, -1, 0, tp0, false, false}},
		{"PP and ATTN_CP and MOE_DP tags",
			"[2026-03-01 00:00:00 DP1 PP0 ATTN_CP1 MOE_DP2 TP1 EP1] Decode batch, #running-req: 1, #token: 1, token usage: 0.00, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0",
			want{Decode, 1, 0, 0, 1, -1, -1, -1, Ranks{DP: 1, PP: 0, AttnCP: 1, MoeDP: 2, TP: 1, EP: 1}, false, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := ParseServerLine(c.line)
			if ev.Kind != SBatch {
				t.Fatalf("kind = %v, want batch (msg %q)", ev.Kind, ev.Msg)
			}
			b, w := ev.Batch, c.want
			if b.Phase != w.phase || b.RunningReqs.V != w.running || b.QueueReqs.V != w.queue || !b.RunningReqs.OK || !b.QueueReqs.OK {
				t.Errorf("phase/running/queue = %v/%v/%v, want %v/%d/%d", b.Phase, b.RunningReqs, b.QueueReqs, w.phase, w.running, w.queue)
			}
			checkOpt(t, "token usage", b.TokenUsage, w.usage)
			checkOpt(t, "gen throughput", b.GenThroughput, w.gen)
			checkOpt(t, "cache hit pct", b.CacheHitPct, w.hitPct)
			if b.Iter != w.iter || b.GPUID != w.gpu {
				t.Errorf("iter/gpu = %d/%d, want %d/%d", b.Iter, b.GPUID, w.iter, w.gpu)
			}
			if ev.Prefix.Ranks != w.ranks {
				t.Errorf("ranks = %+v, want %+v", ev.Prefix.Ranks, w.ranks)
			}
			if ev.Prefix.HasMS != w.ms || ev.Prefix.HasDate != w.hasDate {
				t.Errorf("ms/date = %v/%v, want %v/%v", ev.Prefix.HasMS, ev.Prefix.HasDate, w.ms, w.hasDate)
			}
			for _, f := range b.Fields {
				if f.Key == "" || strings.HasSuffix(f.Value, ",") {
					t.Errorf("bad field %+v", f)
				}
			}
		})
	}
}

func checkOpt(t *testing.T, name string, o Opt[float64], want float64) {
	t.Helper()
	if want < 0 {
		if o.OK {
			t.Errorf("%s = %v, want absent", name, o.V)
		}
		return
	}
	if !o.OK || o.V != want {
		t.Errorf("%s = %+v, want %v", name, o, want)
	}
}

func TestBatchKeepsUnknownKeys(t *testing.T) {
	ev := ParseServerLine("[2026-03-01 00:00:00 TP0] Decode batch, #running-req: 1, #token: 1, token usage: 0.00, pre-allocated usage: 0.10, #prealloc-req: 2, #transfer-req: 3, #retracted-req: 0, new-key: x, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0")
	if ev.Kind != SBatch {
		t.Fatal(ev.Kind)
	}
	if v, ok := ev.Batch.Num("#transfer-req"); !ok || v != 3 {
		t.Errorf("#transfer-req = %v %v", v, ok)
	}
	var found bool
	for _, f := range ev.Batch.Fields {
		found = found || (f.Key == "new-key" && f.Value == "x")
	}
	if !found || !ev.Batch.Graph.OK || !ev.Batch.Graph.V {
		t.Errorf("fields %+v graph %+v", ev.Batch.Fields, ev.Batch.Graph)
	}
	if v, ok := ev.Batch.Num("fwd occupancy"); ok {
		t.Errorf("absent key found: %v", v)
	}
}

func TestPrefixTime(t *testing.T) {
	ev := ParseServerLine("[2026-02-03 14:05:12.345 TP0] Load weight begin. avail mem=77.12 GB")
	want := time.Date(2026, 2, 3, 14, 5, 12, 345e6, time.UTC)
	if !ev.Prefix.Time.Equal(want) || ev.Kind != SStartup || ev.Startup.Stage != "load_weight_begin" || ev.Startup.AvailMemGB != 77.12 {
		t.Errorf("got %v %v %+v", ev.Prefix.Time, ev.Kind, ev.Startup)
	}
	for _, bad := range []string{"[2026-02-03 14:05:12 XX0] hi", "[nope] hi", "[2026-02-03] x", "[12:34] x"} {
		if ev := ParseServerLine(bad); ev.HasPrefix {
			t.Errorf("%q parsed as prefixed", bad)
		}
	}
}

func TestServerLineKinds(t *testing.T) {
	cases := []struct {
		line  string
		kind  ServerKind
		check func(ServerEvent) bool
	}{
		{"[2026-02-03 14:06:35] The server is fired up and ready to roll!", SReady, nil},
		{"[2026-02-03 14:05:41 TP0] KV Cache is allocated. #tokens: 1048576, KV size: 68.62 GB", SStartup,
			func(e ServerEvent) bool {
				return e.Startup.Stage == "kv_cache" && e.Startup.KVTokens == 1048576 && e.Startup.KVSizeGB == 68.62
			}},
		{"[2026-02-03 14:05:41 TP0] KV Cache is allocated. #tokens: 500000, K size: 10.50 GB, V size: 10.50 GB", SStartup,
			func(e ServerEvent) bool { return e.Startup.KVTokens == 500000 && e.Startup.KVSizeGB == 21 }},
		{"[2026-02-03 14:06:31 TP0] max_total_num_tokens=1048576, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=256, context_len=262144, available_gpu_mem=3.80 GB", SStartup,
			func(e ServerEvent) bool {
				s := e.Startup
				return s.Stage == "scheduler_config" && s.MaxTotalNumTokens == 1048576 && s.MaxRunning == 256 && s.ContextLen == 262144 && s.AvailMemGB == 3.8
			}},
		{"[2026-02-03 14:05:40 TP0] Load weight end. elapsed=38.12 s, type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=12.50 GB, mem usage=64.62 GB.", SStartup,
			func(e ServerEvent) bool { return e.Startup.Stage == "load_weight_end" && e.Startup.AvailMemGB == 12.5 }},
		{"[2026-02-03 14:05:41 TP0] Memory pool end. avail mem=5.10 GB", SStartup, nil},
		{"[2026-02-03 14:05:41 TP0] Allocating 200.00 GB host memory for hierarchical KV cache.", SStartup, nil},
		{"[2026-02-03 14:06:30 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=5.00 GB", SStartup, nil},
		{"[2026-02-03 14:06:30 TP0] Capture cuda graph end. Time elapsed: 48.11 s. mem usage=1.20 GB. avail mem=3.80 GB.", SStartup,
			func(e ServerEvent) bool { return e.Startup.Stage == "cuda_graph_end" && e.Startup.AvailMemGB == 3.8 }},
		{"[2025-02-17 05:27:24] INFO:     Uvicorn running on http://0.0.0.0:40000 (Press CTRL+C to quit)", SStartup,
			func(e ServerEvent) bool { return e.Startup.Stage == "uvicorn" && e.Prefix.Level == "INFO" }},
		{`[2025-02-17 05:27:25] INFO:     127.0.0.1:48908 - "GET /get_model_info HTTP/1.1" 200 OK`, SAccess,
			func(e ServerEvent) bool {
				return e.Access == Access{Client: "127.0.0.1:48908", Method: "GET", Path: "/get_model_info", Status: 200}
			}},
		{`[2025-02-17 05:27:25] INFO:     127.0.0.1:48910 - "POST /generate HTTP/1.1" 503 Service Unavailable`, SAccess,
			func(e ServerEvent) bool { return e.Access.Status == 503 && e.Access.Method == "POST" }},
		{"[2026-02-03 14:07:05 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 4096, #new_token_ratio: 0.9998 -> 1.0000", SRetract,
			func(e ServerEvent) bool { return e.Retract == Retract{1, 0.9998, 1} }},
		{"[2025-06-01 00:00:00 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.5000 -> 0.7000", SRetract,
			func(e ServerEvent) bool { return e.Retract == Retract{3, 0.5, 0.7} }},
		{"[2024-10-01 00:00:00 TP0] Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: 0.4000 -> 0.6000", SRetract,
			func(e ServerEvent) bool { return e.Retract.Requests == 2 }},
		{"[10:00:00] decode out of memory happened, #retracted_reqs: 2, #new_token_ratio: 0.4000 -> 0.6000", SRetract, nil},
		{"[2026-03-01 00:00:00 TP0] Testing retraction. #retracted_reqs: 1, #new_tokens_gained: 10, #mamba_num_gained: 1, #new_token_ratio: 0.1000 -> 0.2000", SRetract, nil},
		{"[2026-03-01 00:00:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", SWatchdog,
			func(e ServerEvent) bool { return e.WatchdogTimeout == 300 }},
		{"[2025-03-01 00:00:00 TP0] Watchdog timeout (self.watchdog_timeout=300)", SWatchdog,
			func(e ServerEvent) bool { return e.WatchdogTimeout == 300 }},
		{"[2026-03-01 00:00:00] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 10:00:00. last_heartbeat time: 09:59:30", SHealthFail, nil},
		{"[2026-03-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):", SCrash,
			func(e ServerEvent) bool { return e.Component == "Scheduler" }},
		{"[2026-03-01 00:00:00] DetokenizerManager hit an exception: Traceback (most recent call last):", SCrash,
			func(e ServerEvent) bool { return e.Component == "DetokenizerManager" }},
		{"[2026-03-01 00:00:00] TokenizerManager hit an exception: Traceback (most recent call last):", SCrash, nil},
		{"[2026-03-01 00:00:00] DataParallelController hit an exception", SCrash, nil},
		{"[2026-03-01 00:00:00] Received sigquit from a child process. It usually means the child failed.", SSigquit, nil},
		{"[2026-03-01 00:00:00 TP0] Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.9", SOOM, nil},
		{"[2026-03-01 00:00:00 TP0] Not enough host memory available. Requesting 200.00 GB but only have 100.00 GB free. Please reduce the size of the hierarchical cache.", SOOM, nil},
		{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB.", SOOM, nil},
		{"[2026-03-01 00:00:00] Initialization failed. warmup error: Traceback (most recent call last):", SWarmupFail, nil},
		{"Loading safetensors checkpoint shards:  50% Completed | 32/64 [00:10<00:10, 3.2it/s]", SProgressBar,
			func(e ServerEvent) bool { return e.Bar == Bar{"Loading safetensors checkpoint shards", 50, 32, 64} }},
		{"Traceback (most recent call last):", SCrash, nil},
		{"[2026-03-01 00:00:00] [http_server] Error: Request is disconnected from the client side (type 1). Abort request obj.rid='x'", SError, nil},
		{"[2026-03-01 00:00:00] Cache flushed successfully!", SOther, nil},
		{"just some text", SOther, nil},
		{"", SOther, nil},
	}
	for _, c := range cases {
		ev := ParseServerLine(c.line)
		if ev.Kind != c.kind {
			t.Errorf("%q: kind %v, want %v", c.line, ev.Kind, c.kind)
			continue
		}
		if c.check != nil && !c.check(ev) {
			t.Errorf("%q: fields wrong: %+v", c.line, ev)
		}
	}
}

func TestVLLMLines(t *testing.T) {
	cases := []struct {
		line  string
		kind  ServerKind
		check func(ServerEvent) bool
	}{
		{"INFO 08-14 10:22:31 metrics.py:341] Avg prompt throughput: 12.5 tokens/s, Avg generation throughput: 345.6 tokens/s, Running: 10 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 45.2%, CPU KV cache usage: 0.0%.", SStats,
			func(e ServerEvent) bool {
				s := e.Stats
				return s.GenTokS.V == 345.6 && s.Running.V == 10 && s.Waiting.V == 3 && s.KVUsagePct.V == 45.2 && s.CPUKVUsagePct.OK && e.Prefix.Source == "metrics.py:341" && e.Prefix.Time.Month() == 8
			}},
		{"INFO 08-14 10:22:31 metrics.py:367] Prefix cache hit rate: GPU: 12.50%, CPU: 0.00%", SStats,
			func(e ServerEvent) bool { return e.Stats.PrefixHitPct.V == 12.5 }},
		{"(EngineCore_DP0 pid=413) INFO 06-11 11:46:37 [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1000.0 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 30.1%, Prefix cache hit rate: 2.5%", SStats,
			func(e ServerEvent) bool {
				return e.Stats.Engine == "000" && e.Stats.Running.V == 64 && e.Stats.PrefixHitPct.V == 2.5 && e.Prefix.Process == "EngineCore_DP0 pid=413"
			}},
		{"\x1b[36m(APIServer pid=12345)\x1b[0m INFO 06-11 11:46:37 [loggers.py:118] 2 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 2 reqs, Deferred: 1 reqs, Preemptions: 4, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%, MM cache hit rate: 0.0%", SStats,
			func(e ServerEvent) bool {
				return e.Stats.Engine == "2 Engines Aggregated" && e.Stats.Preemptions.V == 4 && e.Stats.Waiting.V == 2
			}},
		{"(EngineCore_DP0 pid=413) ERROR 11-10 12:30:57 [core.py:710] EngineCore encountered a fatal error.", SCrash,
			func(e ServerEvent) bool { return e.Component == "EngineCore" && e.Prefix.Level == "ERROR" }},
		{"(APIServer pid=1) INFO 11-10 12:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000", SStartup, nil},
		{"(APIServer pid=1) ERROR 11-10 12:00:00 [x.py:1] something broke", SError, nil},
	}
	for _, c := range cases {
		ev := ParseServerLine(c.line)
		if ev.Kind != c.kind || ev.Dialect != DialectVLLM {
			t.Errorf("%q: kind %v dialect %v, want %v vllm", c.line, ev.Kind, ev.Dialect, c.kind)
			continue
		}
		if c.check != nil && !c.check(ev) {
			t.Errorf("%q: fields wrong: %+v", c.line, ev)
		}
	}
}

func TestServerLogAttachesTraceback(t *testing.T) {
	data, err := os.ReadFile("../testdata/logs/sglang_mixed.log")
	if err != nil {
		t.Fatal(err)
	}
	var r ServerLog
	var evs []ServerEvent
	emit := func(e ServerEvent) { evs = append(evs, e) }
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		r.Feed(l, emit)
	}
	r.Flush(emit)
	count := map[ServerKind]int{}
	var crash ServerEvent
	for _, e := range evs {
		count[e.Kind]++
		if e.Kind == SCrash {
			crash = e
		}
	}
	if count[SCrash] != 1 || count[SBatch] != 2 || count[SReady] != 1 || count[SSigquit] != 1 || count[SRetract] != 1 || count[SProgressBar] != 1 {
		t.Fatalf("counts %v", count)
	}
	if crash.Component != "Scheduler" || !crash.OOM || len(crash.Lines) != 3 {
		t.Errorf("crash %q oom=%v lines=%q", crash.Component, crash.OOM, crash.Lines)
	}
}

func TestServerLogVLLMReadyAndCap(t *testing.T) {
	var r ServerLog
	var evs []ServerEvent
	emit := func(e ServerEvent) { evs = append(evs, e) }
	r.Feed("(APIServer pid=1) INFO 11-10 12:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000", emit)
	r.Feed("(APIServer pid=1) INFO 11-10 12:00:01 [launcher.py:1] INFO:     Application startup complete.", emit)
	r.Feed("[2026-01-01 00:00:00] INFO:     Application startup complete.", emit)
	if len(evs) != 3 || evs[1].Kind != SReady {
		t.Fatalf("evs %+v", evs)
	}
	// an SGLang log: app_started is only a startup step
	var s ServerLog
	evs = nil
	s.Feed("[2026-01-01 00:00:00] INFO:     Application startup complete.", emit)
	if evs[0].Kind != SStartup {
		t.Errorf("sglang app_started = %v", evs[0].Kind)
	}
	evs = nil
	s.Feed("Traceback (most recent call last):", emit)
	for i := 0; i < MaxAttached+50; i++ {
		s.Feed("  File \"x.py\", line 1, in f\x1b]0;pwned\x07", emit)
	}
	s.Flush(emit)
	if len(evs) != 1 || len(evs[0].Lines) != MaxAttached || evs[0].LinesDropped != 50 {
		t.Fatalf("got %d events, %d lines, %d dropped", len(evs), len(evs[0].Lines), evs[0].LinesDropped)
	}
	if strings.Contains(evs[0].Lines[0], "\x1b") {
		t.Error("continuation line not sanitised")
	}
}
