package parse

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func fixtureLines(t testing.TB, name string) []string {
	t.Helper()
	data, err := os.ReadFile("../testdata/logs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func feedLog(lines []string) []ServerEvent {
	var r ServerLog
	var evs []ServerEvent
	emit := func(e ServerEvent) { evs = append(evs, e) }
	for _, l := range lines {
		r.Feed(l, emit)
	}
	r.Flush(emit)
	return evs
}

type wantEv struct {
	kind  ServerKind
	fault Fault
	check func(ServerEvent) bool
}

func checkEvents(t *testing.T, evs []ServerEvent, want []wantEv) {
	t.Helper()
	if len(evs) != len(want) {
		for _, e := range evs {
			t.Logf("%v %q lines=%d", e.Kind, e.Msg, len(e.Lines))
		}
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	for i, w := range want {
		e := evs[i]
		if e.Kind != w.kind || e.Fault() != w.fault {
			t.Errorf("event %d %q: kind %v fault %q, want %v %q", i, e.Msg, e.Kind, e.Fault(), w.kind, w.fault)
			continue
		}
		if w.check != nil && !w.check(e) {
			t.Errorf("event %d %q: fields wrong: %+v", i, e.Msg, e)
		}
	}
}

func TestFaultLinesFromFormatStrings(t *testing.T) {
	usage := func(u float64, used int) func(ServerEvent) bool {
		return func(e ServerEvent) bool {
			return e.Batch.TokenUsage.V == u && (used < 0 || e.Batch.UsedTokens.V == used)
		}
	}
	checkEvents(t, feedLog(fixtureLines(t, "faults/format_strings.log")), []wantEv{
		{SCrash, FaultCrash, func(e ServerEvent) bool {
			return e.Component == "Scheduler" && len(e.Lines) == 3 && strings.HasPrefix(e.Lines[2], "RuntimeError: NCCL")
		}},
		{SSigquit, FaultCrash, nil},
		{SWatchdog, FaultCrash, func(e ServerEvent) bool { return e.Component == "Scheduler" && e.WatchdogTimeout == 300 }},
		{SWatchdogSoft, FaultWarning, func(e ServerEvent) bool { return e.Component == "TokenizerManager" && e.WatchdogTimeout == 300 }},
		{SBatch, FaultNone, nil}, // decoding goes on after a soft watchdog
		{SWatchdog, FaultCrash, func(e ServerEvent) bool { return e.WatchdogTimeout == 300 }},
		{SHealthFail, FaultFault, nil},
		{SBatch, FaultNone, usage(0.80, 90000)}, // SWA: the fuller pool
		{SBatch, FaultNone, usage(0.90, 90000)}, // Mamba
		{SBatch, FaultNone, usage(0.45, 9000)},  // HiSparse: gpu, not cpu
		{SBatch, FaultNone, func(e ServerEvent) bool {
			return usage(0.60, -1)(e) && e.Prefix.Ranks.PP == 3 && e.Prefix.Ranks.DP == 0
		}},
		{SCrash, FaultCrash, func(e ServerEvent) bool {
			return e.Component == "EngineCore" && e.Dialect == DialectVLLM && len(e.Lines) == 3 && e.OOM
		}},
		{SOther, FaultNone, func(e ServerEvent) bool { return e.Prefix.Process == "APIServer pid=4170" }},
		{SReady, FaultNone, func(e ServerEvent) bool { return e.Dialect == DialectVLLM }},
		{SAccess, FaultNone, func(e ServerEvent) bool {
			return e.Access == Access{Client: "127.0.0.1:5000", Method: "POST", Path: "/v1/chat/completions", Status: 400}
		}},
		{SOther, FaultNone, func(e ServerEvent) bool {
			return e.Prefix.Process == "EngineCore_DP0 pid=322" && e.Prefix.Level == "DEBUG" && e.Msg == "EngineCore waiting for work."
		}},
		{SStats, FaultNone, func(e ServerEvent) bool { return e.Stats.Running.V == 64 && e.Stats.Engine == "000" }},
	})
}

// issue 39: vLLM's engine deaths, its launcher's stop, a V1 engine's
// startup steps, and the load lines a restart or a long prompt gives.
func TestRound2Lines(t *testing.T) {
	comp := func(c string) func(ServerEvent) bool { return func(e ServerEvent) bool { return e.Component == c } }
	stage := func(st string) func(ServerEvent) bool {
		return func(e ServerEvent) bool { return e.Startup.Stage == st }
	}
	checkEvents(t, feedLog(fixtureLines(t, "faults/round2_2026.log")), []wantEv{
		{SCrash, FaultCrash, comp("Worker")},
		{SCrash, FaultCrash, comp("RayWorkerProc")},
		{SCrash, FaultCrash, func(e ServerEvent) bool { return e.Component == "AsyncLLM" && len(e.Lines) == 1 }},
		{SCrash, FaultCrash, func(e ServerEvent) bool { return e.Component == "AsyncLLMEngine" && e.Prefix.Level == "CRITICAL" }},
		{SStop, FaultStop, nil},
		{SStop, FaultStop, nil},
		{SStartup, FaultNone, stage("engine_init")},
		{SStartup, FaultNone, stage("load_weight_end")},
		{SStartup, FaultNone, stage("compile")},
		{SStartup, FaultNone, stage("kv_cache")},
		{SStartup, FaultNone, stage("cuda_graph_end")},
		{SStartup, FaultNone, stage("engine_ready")},
		{SStats, FaultNone, func(e ServerEvent) bool { return e.Stats.Running.V == 29 && e.Stats.Waiting.V == 108 }},
		{SBatch, FaultNone, func(e ServerEvent) bool { return e.Batch.NewSeq.V == 1 && e.Batch.InputThroughput.V == 410 }},
		{SAccess, FaultNone, func(e ServerEvent) bool { return e.Access.Path == "/health" }},
		{SStartup, FaultNone, stage("launch")},
		{SStartup, FaultNone, stage("launch")},
		{SStartup, FaultNone, stage("launch")}, // today's SGLang: server_args={…}, a dict
	})
}

func TestFaultLinesAsUsersPostedThem(t *testing.T) {
	checkEvents(t, feedLog(fixtureLines(t, "faults/user_posted.log")), []wantEv{
		{SWatchdog, FaultCrash, func(e ServerEvent) bool { return e.Prefix.Ranks.TP == 4 }},
		{SSigquit, FaultCrash, nil}, // "proces." as 2025 builds print it
		{SWatchdog, FaultCrash, func(e ServerEvent) bool { return e.Prefix.Ranks.DP == 4 }},
		{SBatch, FaultNone, func(e ServerEvent) bool { return e.Batch.GenThroughput.V == 447.31 && !e.Prefix.HasDate }},
		{SBatch, FaultNone, func(e ServerEvent) bool { return e.Batch.CacheHitPct.V == 2.76 && e.Batch.QueueReqs.V == 38 }},
		{SCrash, FaultCrash, func(e ServerEvent) bool { return len(e.Lines) == 1 }},
		{SCrash, FaultCrash, func(e ServerEvent) bool { return e.Prefix.Process == "EngineCore_DP0 pid=595868" && len(e.Lines) == 3 }},
		{SCrash, FaultCrash, func(e ServerEvent) bool { return e.Component == "EngineCore" }},
		{SStartup, FaultNone, func(e ServerEvent) bool {
			return e.Prefix.Process == "VllmWorker TP1 pid=675229" && e.Startup.Stage == "load_weight_end"
		}},
		{SOther, FaultNone, nil},
		{SOther, FaultNone, nil},
		{SOther, FaultNone, func(e ServerEvent) bool {
			return e.Wrap.Runtime == "docker-json" && e.Wrap.Actor == "WorkerDict pid=616, ip=192.168.149.159" && e.Wrap.ANSI &&
				strings.HasPrefix(e.Msg, "frame #44")
		}},
	})
}

// wrappers put a line the way deployments do.
var wrappers = map[string]func(string) []string{
	"ray":        func(l string) []string { return []string{"(SGLangEngine pid=123) " + l} },
	"ray-ip":     func(l string) []string { return []string{"(WorkerDict pid=616, ip=10.0.0.7) " + l} },
	"ray-color":  func(l string) []string { return []string{"\x1b[36m(SGLangEngine pid=123)\x1b[0m " + l} },
	"color":      func(l string) []string { return []string{"\x1b[32m" + l + "\x1b[0m"} },
	"crlf":       func(l string) []string { return []string{l + "\r"} },
	"docker":     func(l string) []string { return []string{"2026-03-01T02:03:04.123456789Z " + l} },
	"cri":        func(l string) []string { return []string{"2026-03-01T02:03:04.123456789Z stderr F " + l} },
	"cri-offset": func(l string) []string { return []string{"2026-03-01T02:03:04.123456789+01:00 stdout F " + l} },
	"cri-split": func(l string) []string {
		cut := len(l) / 2
		return []string{"2026-03-01T02:03:04.1Z stdout P " + l[:cut], "2026-03-01T02:03:04.2Z stdout F " + l[cut:]}
	},
	"cri+ray-color": func(l string) []string {
		return []string{"2026-03-01T02:03:04.123456789Z stderr F \x1b[36m(SGLangEngine pid=5)\x1b[0m " + l}
	},
	"docker+ray": func(l string) []string { return []string{"2026-03-01T02:03:04Z (SGLangEngine pid=5) " + l} },
	// issue 39: compose, supervisord, the journal, ts, a collector's stamp, Ray's unnamed tags
	"compose":          func(l string) []string { return []string{"vllm-1  | " + l} },
	"compose-color":    func(l string) []string { return []string{"\x1b[36mvllm-1  | \x1b[0m" + l} },
	"compose-t":        func(l string) []string { return []string{"sglang_server  | 2026-03-01T02:03:04.123456789Z " + l} },
	"supervisor":       func(l string) []string { return []string{"vllm | stderr | " + l} },
	"journald-iso":     func(l string) []string { return []string{"2026-03-01T02:03:04+0000 gpu1 python3[28059]: " + l} },
	"journald-precise": func(l string) []string { return []string{"2026-03-01T02:03:04.123456+01:00 gpu1 vllm[28059]: " + l} },
	"journald-short":   func(l string) []string { return []string{"Mar 01 02:03:04 gpu1 python3[28059]: " + l} },
	"journald-locale":  func(l string) []string { return []string{"авг 18 14:15:04 llm python3[28059]: " + l} },
	"ts":               func(l string) []string { return []string{"Mar 01 02:03:04 " + l} },
	"ts-s":             func(l string) []string { return []string{"00:12:05.123456 " + l} },
	"stamp":            func(l string) []string { return []string{"2026-04-19 12:09:51.205 | " + l} },
	"ray-pid":          func(l string) []string { return []string{"(pid=77) " + l} },
	"ray-pid-ip": func(l string) []string {
		return []string{"(pid=77, ip=10.0.0.7) " + l + " [repeated 3x across cluster]"}
	},
	"ts+compose-t+ray": func(l string) []string {
		return []string{"Mar 01 02:03:04 vllm-1  | 2026-03-01T02:03:04Z (SGLangEngine pid=5) " + l}
	},
	"journald+compose": func(l string) []string { return []string{"2026-03-01T02:03:04+0000 gpu1 dockerd[9]: vllm-1  | " + l} },
	"cri+supervisor+ray": func(l string) []string {
		return []string{"2026-03-01T02:03:04.1Z stdout F vllm | stdout | (pid=77) " + l}
	},
	"cri-split+compose": func(l string) []string {
		l = "vllm-1  | " + l
		cut := len(l) / 3
		return []string{"2026-03-01T02:03:04.1Z stdout P " + l[:cut], "2026-03-01T02:03:04.2Z stdout F " + l[cut:]}
	},
}

func stripWrap(evs []ServerEvent) []ServerEvent {
	out := make([]ServerEvent, len(evs))
	for i, e := range evs {
		e.Wrap = Wrap{}
		out[i] = e
	}
	return out
}

// Every fixture line, wrapped in each wrapper and combinations, parses to
// the same event as the bare line, alone and as a whole log.
func TestWrappedLinesParseTheSame(t *testing.T) {
	for _, file := range []string{"faults/format_strings.log", "faults/user_posted.log", "faults/lifecycle_2026.log", "faults/round2_2026.log", "sglang_mixed.log", "sglang_v046.log", "vllm_v1.log"} {
		var lines []string
		for _, l := range fixtureLines(t, file) {
			if !strings.HasPrefix(l, `{"log":`) { // already wrapped
				lines = append(lines, l)
			}
		}
		bare := stripWrap(feedLog(lines))
		for name, wrap := range wrappers {
			var wrapped []string
			for _, l := range lines {
				ws := wrap(l)
				wrapped = append(wrapped, ws...)
				if len(ws) == 1 && !strings.Contains(l, "\x1b") {
					a, b := ParseServerLine(l), ParseServerLine(ws[0])
					a.Wrap, b.Wrap = Wrap{}, Wrap{}
					if !reflect.DeepEqual(a, b) {
						t.Errorf("%s %s: %q\n bare    %+v\n wrapped %+v", file, name, l, a, b)
					}
				}
			}
			if got := stripWrap(feedLog(wrapped)); !reflect.DeepEqual(got, bare) {
				t.Errorf("%s %s: the wrapped log gives %d events, the bare one %d", file, name, len(got), len(bare))
				for i := range got {
					if i < len(bare) && !reflect.DeepEqual(got[i], bare[i]) {
						t.Errorf("first difference at %d:\n bare    %+v\n wrapped %+v", i, bare[i], got[i])
						break
					}
				}
			}
		}
	}
}

func TestUnwrap(t *testing.T) {
	cases := []struct {
		line, inner string
		check       func(Wrap) bool
	}{
		{"2026-03-01T02:03:04.123456789Z stderr F [2026-03-01 02:03:04 TP0] x", "[2026-03-01 02:03:04 TP0] x",
			func(w Wrap) bool {
				return w.Runtime == "cri" && w.Stream == "stderr" && !w.Partial && w.Time.Nanosecond() == 123456789
			}},
		{"2026-03-01T02:03:04.5Z stdout P half", "half", func(w Wrap) bool { return w.Partial }},
		{"2026-03-01T02:03:04Z stdout F ", "", func(w Wrap) bool { return w.Runtime == "cri" }},
		{"2026-03-01T02:03:04.1Z hello", "hello", func(w Wrap) bool { return w.Runtime == "docker" }},
		{"(SGLangEngine pid=12) (APIServer pid=1) INFO:     x", "(APIServer pid=1) INFO:     x",
			func(w Wrap) bool { return w.Actor == "SGLangEngine pid=12" }},
		{"(APIServer pid=1) (EngineCore_DP0 pid=322) DEBUG y", "(APIServer pid=1) (EngineCore_DP0 pid=322) DEBUG y",
			func(w Wrap) bool { return w.Actor == "" }},
		{"(not a tag) x", "(not a tag) x", nil},
		{"(x pid=12a) y", "(x pid=12a) y", nil},
		{"2026-13-01T02:03:04Z x", "2026-13-01T02:03:04Z x", func(w Wrap) bool { return w.Runtime == "" }},
		{`{"log":"abc\n","stream":"stdout","time":"2026-03-01T02:03:04Z"}`, "abc", func(w Wrap) bool { return w.Runtime == "docker-json" && w.Time.Year() == 2026 }},
		{`{"log":1}`, `{"log":1}`, nil},
		{"vllm-1  | 2026-03-01T02:03:04.5Z x", "x", func(w Wrap) bool {
			return w.Runtime == "compose" && w.Service == "vllm-1" && w.Time.Nanosecond() == 5e8
		}},
		{"vllm | stderr | x", "x", func(w Wrap) bool { return w.Runtime == "supervisor" && w.Stream == "stderr" && w.Service == "vllm" }},
		{"2026-03-01T02:03:04+0100 gpu1 python3[28059]: x", "x", func(w Wrap) bool {
			return w.Runtime == "journald" && w.Service == "python3" && w.Time.Hour() == 1
		}},
		{"Mar 01 02:03:04 gpu1 python3[28059]: x", "x", func(w Wrap) bool { return w.Runtime == "journald" && w.Time.IsZero() }},
		{"Mar 01 02:03:04 x", "x", func(w Wrap) bool { return w.Runtime == "ts" }},
		{"(pid=77, ip=10.0.0.7) x [repeated 3x across cluster]", "x", func(w Wrap) bool { return w.Actor == "pid=77, ip=10.0.0.7" }},
		{"(pid=77) x [repeated 2x across cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication for more options.)",
			"x", func(w Wrap) bool { return w.Actor == "pid=77" }},
		// lines that only look like wrappers stay whole
		{"Loading safetensors checkpoint shards:  50% Completed | 32/64 [00:10<00:10, 3.2it/s]", "Loading safetensors checkpoint shards:  50% Completed | 32/64 [00:10<00:10, 3.2it/s]", nil},
		{"2026-02-26 13:55:38  INFO smg::server: src/server.rs:794: Starting router on 0.0.0.0:8000 | mode: Regular", "2026-02-26 13:55:38  INFO smg::server: src/server.rs:794: Starting router on 0.0.0.0:8000 | mode: Regular", nil},
		{"INFO 08-14 10:22:31 metrics.py:341] x", "INFO 08-14 10:22:31 metrics.py:341] x", nil},
		{"x | y", "y", func(w Wrap) bool { return w.Runtime == "compose" }}, // compose pads a one-letter service to "x "
	}
	for _, c := range cases {
		inner, w := Unwrap(c.line)
		if inner != c.inner || (c.check != nil && !c.check(w)) {
			t.Errorf("Unwrap(%q) = %q %+v, want %q", c.line, inner, w, c.inner)
		}
	}
}

func FuzzUnwrap(f *testing.F) {
	for _, l := range []string{
		"2026-03-01T02:03:04.123456789Z stderr F (SGLangEngine pid=1) [2026-03-01 02:03:04 TP0] Decode batch, #running-req: 1",
		"\x1b[36m(APIServer pid=1)\x1b[0m (EngineCore_DP0 pid=2) INFO 01-01 00:00:00 [a.py:1] x",
		`{"log":"\u001b[36m(W pid=1, ip=1.2.3.4)\u001b[0m x\n","stream":"stderr","time":"2026-03-01T02:03:04Z"}`,
		"2026-03-01T02:03:04Z stdout P ", "(a pid=1)", "((( pid=1) ",
	} {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		inner, w := Unwrap(line)
		if len(inner) > 3*len(line) && w.Runtime != "docker-json" { // invalid UTF-8 becomes U+FFFD; json unescaping may grow a line
			t.Fatalf("Unwrap grew %q to %q", line, inner)
		}
		if strings.IndexByte(inner, 0x1b) >= 0 {
			t.Fatalf("escape left in %q", inner)
		}
		if w.Runtime == "" && w.Actor == "" && !w.ANSI && inner != line && !strings.HasSuffix(line, "\r") && cleanString(line) {
			t.Fatalf("unwrapped nothing but changed %q to %q", line, inner)
		}
		ev := ParseServerLine(line)
		if ev.Kind == SBatch && ev.Batch.Phase == 0 {
			t.Fatal("batch without phase")
		}
		var r ServerLog
		r.Feed(line, func(ServerEvent) {})
		r.Feed(line, func(ServerEvent) {})
		r.Flush(func(ServerEvent) {})
	})
}

// A vLLM warning logged with its traceback (exc_info=True: every line under
// the same prefix) is one record, not a crash; the interleaving generator
// (pipeline/interleave_test.go) found it read as one.
func TestVLLMWarningWithTracebackIsNoCrash(t *testing.T) {
	p := "(APIServer pid=4170) WARNING 11-29 02:58:02 [tool_parsers.py:88] "
	evs := feedLog([]string{p + "Tool parser could not parse the output; returning it as text.", p + "Traceback (most recent call last):",
		p + `  File "/vllm/entrypoints/openai/tool_parsers/x.py", line 88, in extract`, p + "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
		"(APIServer pid=4170) INFO 11-29 02:58:09 [loggers.py:257] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%",
		"(APIServer pid=4170) INFO 11-29 02:58:09 [loggers.py:257] Engine 001: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%"})
	checkEvents(t, evs, []wantEv{{SOther, FaultNone, nil}, {SStats, FaultNone, nil}, {SStats, FaultNone, nil}})
}
