package parse

import (
	"strconv"
	"strings"
)

// ServerKind says what a server (SGLang or vLLM) log line is.
type ServerKind int

const (
	SOther        ServerKind = iota
	SBatch                   // SGLang Prefill/Decode batch
	SStats                   // vLLM periodic stats
	SStartup                 // a startup step: weights, KV pool, graphs, config, uvicorn
	SReady                   // the server answers requests
	SAccess                  // uvicorn access line
	SRetract                 // KV cache full, requests retracted
	SWatchdog                // watchdog timeout
	SHealthFail              // health check failed
	SCrash                   // "hit an exception", a traceback, vLLM fatal error
	SOOM                     // out of memory (CUDA or KV pool)
	SSigquit                 // parent reaping a failed child
	SWarmupFail              // initialization failed during warmup
	SProgressBar             // tqdm progress (no prefix)
	SError                   // another line that looks like an error
	SWatchdogSoft            // a soft watchdog timeout (self.soft=True): a warning, the process goes on
	SChildDied               // "Subprocess scheduler_0 (pid=N) crashed with exit code C.": a child of the server ended
	SCrashTail               // what a dying server prints last: "kill_process_tree called", "No live scheduler processes found"
	SStop                    // a graceful stop: "SIGTERM received … Draining requests", uvicorn "Shutting down"
	SHang                    // progress stopped: NCCL/ProcessGroup watchdog timeout, vLLM shm broadcast wait, RPC timeout
)

var serverKindNames = [...]string{"other", "batch", "stats", "startup", "ready", "access", "retract", "watchdog", "health_fail", "crash", "oom", "sigquit", "warmup_fail", "progress_bar", "error", "watchdog_soft", "child_died", "crash_tail", "stop", "hang"}

func (k ServerKind) String() string {
	if int(k) < len(serverKindNames) {
		return serverKindNames[k]
	}
	return "unknown"
}

// Fault is how bad a server log record is for the server's life, so that a
// watcher can raise its own event and notification for each class.
type Fault uint8

const (
	FaultNone    Fault = iota
	FaultWarning       // worth a note; the process goes on (a soft watchdog timeout)
	FaultFault         // the server is sick but alive (a failed health check)
	FaultCrash         // the server or a process it needs is gone or about to be killed
	FaultStop          // the server was asked to stop and does so: not a crash
	FaultHang          // the server is alive but makes no progress
)

var faultNames = [...]string{"", "warning", "fault", "crash", "stop", "hang"}

func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "unknown"
}

// Fault classifies a record kind:
//   - FaultCrash: SCrash ("Scheduler hit an exception", vLLM "EngineCore
//     encountered a fatal error."), SWatchdog (hard: the watchdog then sends
//     SIGQUIT), SSigquit, SOOM, SWarmupFail, SChildDied, SCrashTail;
//   - FaultStop: SStop (SIGTERM, draining);
//   - FaultHang: SHang;
//   - FaultFault: SHealthFail ("Health check failed. …", /health answers 503);
//   - FaultWarning: SWatchdogSoft;
//   - FaultNone: everything else, SError included.
//
// A child that ended without fail-stop (SGLang logs it at WARNING and goes
// on) is a fault, not a crash: see ServerEvent.Fault.
func (k ServerKind) Fault() Fault {
	switch k {
	case SCrash, SWatchdog, SSigquit, SOOM, SWarmupFail, SChildDied, SCrashTail:
		return FaultCrash
	case SStop:
		return FaultStop
	case SHang:
		return FaultHang
	case SHealthFail:
		return FaultFault
	case SWatchdogSoft:
		return FaultWarning
	}
	return FaultNone
}

// Dialect is the server that wrote a line.
type Dialect uint8

const (
	DialectUnknown Dialect = iota
	DialectSGLang
	DialectVLLM
)

// ServerEvent is one parsed server log record. Multi-line records (a
// traceback under "Scheduler hit an exception") carry their continuation
// lines in Lines.
type ServerEvent struct {
	Kind      ServerKind
	Dialect   Dialect
	HasPrefix bool
	Prefix    Prefix
	Msg       string // the message, without the prefix

	Batch   Batch     // SBatch
	Stats   VLLMStats // SStats
	Startup Startup   // SStartup
	Access  Access    // SAccess
	Retract Retract   // SRetract
	Bar     Bar       // SProgressBar

	WatchdogTimeout int      // SWatchdog, SWatchdogSoft: seconds, 0 when not printed
	ExitCode        Opt[int] // SChildDied, and an SCrash "Rank N scheduler died during initialization (exit code: C)"
	Component       string   // SCrash, SWatchdog*: "Scheduler", "TokenizerManager", "DetokenizerManager", "EngineCore", ...
	OOM             bool     // SCrash: the traceback reports CUDA out of memory
	Lines           []string
	LinesDropped    int // continuation lines beyond MaxAttached

	// Wrap is what the deployment put around the line (Ray tag, docker or
	// CRI timestamp, colour). It is not part of what the server said: the
	// same line wrapped or not gives the same event but for Wrap.
	Wrap Wrap
}

// Fault is the event's fault class (see ServerKind.Fault). A child that
// died without "Triggering SIGQUIT" (SGLang's non-fail-stop watchdog logs it
// at WARNING and goes on) leaves the server sick, not dead.
func (ev *ServerEvent) Fault() Fault {
	if ev.Kind == SChildDied && !strings.Contains(ev.Msg, "Triggering SIGQUIT") {
		return FaultFault
	}
	return ev.Kind.Fault()
}

// Startup is a startup step and the figures it prints.
type Startup struct {
	Stage             string  // load_weight_begin, load_weight_end, kv_cache, kv_cache_dtype, memory_pool, hicache, cuda_graph_begin, cuda_graph_end, scheduler_config, uvicorn, api_server, app_started
	KVCacheDtype      string  // kv_cache_dtype: the dtype the scheduler resolved, without "torch." (float8_e4m3fn, bfloat16, ...)
	KVTokens          int     // kv_cache: "#tokens: N"
	KVSizeGB          float64 // kv_cache: "KV size" (MLA) or K+V size (MHA)
	MaxTotalNumTokens int     // scheduler_config
	MaxRunning        int     // scheduler_config
	ContextLen        int     // scheduler_config
	AvailMemGB        float64 // avail mem=... when printed
}

// Access is a uvicorn access line.
type Access struct {
	Client, Method, Path string
	Status               int
}

// Retract is a KV-full retraction.
type Retract struct {
	Requests           int
	RatioFrom, RatioTo float64
}

// Bar is a tqdm progress line such as weight loading.
type Bar struct {
	Desc     string
	Percent  float64
	N, Total int
}

// ParseServerLine parses one line on its own. Deployment wrappers (see
// Unwrap) are peeled off first. Use ServerLog to attach traceback
// continuation lines to the record they belong to and to join CRI partial
// lines.
func ParseServerLine(line string) ServerEvent {
	inner, w := Unwrap(line)
	ev := parseInner(inner)
	ev.Wrap = w
	return ev
}

// parseInner parses a line with its wrappers already removed.
func parseInner(line string) ServerEvent {
	if p, msg, ok := parseSGLangPrefix(line); ok {
		ev := ServerEvent{HasPrefix: true, Prefix: p, Msg: msg, Dialect: DialectSGLang}
		classify(&ev)
		return ev
	}
	if p, msg, ok := parseVLLMPrefix(line); ok {
		ev := ServerEvent{HasPrefix: true, Prefix: p, Msg: msg, Dialect: DialectVLLM}
		classify(&ev)
		if p.Process != "" && ev.Kind == SStartup && ev.Startup.Stage == "app_started" {
			ev.Kind = SReady // "(APIServer pid=N) INFO:     Application startup complete."
		}
		return ev
	}
	ev := ServerEvent{Msg: line, Prefix: Prefix{Ranks: NoRanks}}
	if b, ok := parseBar(line); ok {
		ev.Kind, ev.Bar = SProgressBar, b
		return ev
	}
	classify(&ev)
	return ev
}

func classify(ev *ServerEvent) {
	m := ev.Msg
	if b, ok := parseBatch(m); ok {
		ev.Kind, ev.Batch = SBatch, b
		return
	}
	if s, ok := parseVLLMStats(m); ok {
		ev.Kind, ev.Stats = SStats, s
		return
	}
	switch {
	case strings.HasPrefix(m, "The server is fired up and ready to roll!"):
		ev.Kind = SReady
	case strings.HasPrefix(m, "INFO:") || strings.HasPrefix(m, "WARNING:") || strings.HasPrefix(m, "ERROR:"):
		classifyUvicorn(ev)
	case strings.Contains(m, " hit an exception"):
		ev.Kind = SCrash
		ev.Component = m[:strings.Index(m, " hit an exception")]
		ev.OOM = isOOM(m)
	case strings.HasPrefix(m, "Traceback (most recent call last)"):
		ev.Kind = SCrash
	case strings.HasPrefix(m, "EngineCore encountered a fatal error") || strings.HasPrefix(m, "EngineCore failed to start") ||
		strings.Contains(m, "EngineDeadError") || strings.HasPrefix(m, "Engine core proc ") && strings.Contains(m, " died unexpectedly"):
		ev.Kind, ev.Component = SCrash, "EngineCore"
	case isEngineDeath(m):
		ev.Kind, ev.Component = SCrash, engineDeathComponent(m)
	case strings.Contains(m, "Received sigquit from a child proces"), // launch phase; "proces." in 2025 builds
		strings.HasPrefix(m, "SIGQUIT received."): // running phase (tokenizer_manager.py running_phase_sigquit_handler)
		ev.Kind = SSigquit
	case strings.HasPrefix(m, "Subprocess ") && strings.Contains(m, ") crashed with exit code "):
		parseChildDied(ev)
	case strings.HasPrefix(m, "kill_process_tree called"), strings.HasPrefix(m, "No live scheduler processes found"),
		strings.Contains(m, "but crash dump already performed"):
		ev.Kind = SCrashTail
	case strings.HasPrefix(m, "SIGTERM received."), strings.HasPrefix(m, "Gracefully exiting..."),
		strings.HasPrefix(m, "Shutting down FastAPI HTTP server"): // vLLM launcher.py, after SIGINT/SIGTERM
		ev.Kind = SStop
	case strings.Contains(m, "scheduler died during initialization"):
		ev.Kind, ev.Component = SCrash, "Scheduler"
		if _, v, ok := strings.Cut(m, "(exit code: "); ok {
			ev.ExitCode = optInt(leadingNumber(v))
		}
	case isHang(m):
		ev.Kind = SHang
	case strings.Contains(m, "atchdog timeout ("):
		parseWatchdog(ev)
	case strings.HasPrefix(m, "Health check failed"):
		ev.Kind = SHealthFail
	case strings.HasPrefix(m, "Initialization failed. warmup error"):
		ev.Kind = SWarmupFail
	case isRetract(m):
		ev.Kind, ev.Retract = SRetract, parseRetract(m)
	case isOOM(m):
		ev.Kind = SOOM
	default:
		if st, ok := parseStartup(m); ok {
			ev.Kind, ev.Startup = SStartup, st
			return
		}
		if ev.Prefix.Level == "ERROR" || ev.Prefix.Level == "CRITICAL" || IsErrorLine(m) {
			ev.Kind = SError
		}
	}
}

// parseWatchdog reads SGLang's watchdog lines (utils/watchdog.py
// ProcessWatchdog: f"{debug_name} watchdog timeout ({self.watchdog_timeout=}, {self.soft=})";
// the older scheduler thread: f"Watchdog timeout ({self.watchdog_timeout=})").
// With soft=True the process goes on; otherwise SIGQUIT follows.
func parseWatchdog(ev *ServerEvent) {
	m := ev.Msg
	ev.Kind, ev.Component = SWatchdog, "Scheduler"
	if head, _, ok := strings.Cut(m, " watchdog timeout ("); ok && head != "" && !strings.ContainsAny(head, " (") {
		ev.Component = head
	}
	if strings.Contains(m, "self.soft=True") {
		ev.Kind = SWatchdogSoft
	}
	if _, v, ok := strings.Cut(m, "watchdog_timeout="); ok {
		f, _ := strconv.ParseFloat(leadingNumber(v), 64)
		ev.WatchdogTimeout = int(f)
	}
}

// parseChildDied reads SGLang's SubprocessWatchdog line (utils/watchdog.py):
// f"Subprocess {name} (pid={proc.pid}) crashed with exit code {proc.exitcode}. Triggering SIGQUIT for cleanup..."
func parseChildDied(ev *ServerEvent) {
	m := ev.Msg
	ev.Kind = SChildDied
	name, _, _ := strings.Cut(m[len("Subprocess "):], " (pid=")
	ev.Component = name
	if _, v, ok := strings.Cut(m, "crashed with exit code "); ok {
		ev.ExitCode = optInt(leadingNumber(v))
	}
}

// isHang: lines that say a collective or a worker stopped making progress.
// torch ProcessGroupNCCL ("[Rank 0] Watchdog caught collective operation
// timeout: WorkNCCL(…) ran for 600081 milliseconds before timing out.",
// "ProcessGroupNCCL's watchdog got stuck for 480 seconds …"), vLLM's
// shm_broadcast.py ("No available shared memory broadcast block found in 60
// seconds. …") and its RPC timeout ("RPC call to sample_tokens timed out.").
func isHang(m string) bool {
	return strings.Contains(m, "Watchdog caught collective operation timeout") ||
		strings.Contains(m, "watchdog got stuck for") ||
		strings.HasPrefix(m, "No available shared memory broadcast block found") ||
		strings.HasPrefix(m, "RPC call to ") && strings.Contains(m, " timed out")
}

func classifyUvicorn(ev *ServerEvent) {
	lvl, rest, _ := strings.Cut(ev.Msg, ":")
	ev.Prefix.Level = lvl
	rest = strings.TrimLeft(rest, " ")
	switch {
	case strings.HasPrefix(rest, "Uvicorn running on "):
		ev.Kind, ev.Startup.Stage = SStartup, "uvicorn"
	case strings.HasPrefix(rest, "Application startup complete"):
		ev.Kind, ev.Startup.Stage = SStartup, "app_started"
	case strings.HasPrefix(rest, "Shutting down"): // uvicorn, on SIGTERM or SIGINT
		ev.Kind = SStop
	default:
		if a, ok := parseAccess(rest); ok {
			ev.Kind, ev.Access = SAccess, a
		} else if lvl == "ERROR" {
			ev.Kind = SError
		}
	}
}

// `127.0.0.1:48908 - "GET /get_model_info HTTP/1.1" 200 OK`
func parseAccess(s string) (Access, bool) {
	client, rest, ok := strings.Cut(s, ` - "`)
	if !ok {
		return Access{}, false
	}
	req, status, ok := strings.Cut(rest, `" `)
	if !ok {
		return Access{}, false
	}
	f := strings.Fields(req)
	if len(f) < 2 {
		return Access{}, false
	}
	code, err := strconv.Atoi(leadingNumber(status))
	if err != nil {
		return Access{}, false
	}
	return Access{Client: client, Method: f[0], Path: f[1], Status: code}, true
}

func isRetract(m string) bool {
	return strings.HasPrefix(m, "KV cache pool is full. Retract requests.") ||
		strings.HasPrefix(m, "Testing retraction.") ||
		strings.HasPrefix(m, "Decode out of memory happened") ||
		strings.HasPrefix(m, "decode out of memory happened")
}

func parseRetract(m string) Retract {
	var r Retract
	if _, v, ok := strings.Cut(m, "#retracted_reqs: "); ok {
		r.Requests, _ = strconv.Atoi(leadingNumber(v))
	}
	if _, v, ok := strings.Cut(m, "#new_token_ratio: "); ok {
		from, to, _ := strings.Cut(v, " -> ")
		r.RatioFrom, _ = strconv.ParseFloat(leadingNumber(from), 64)
		r.RatioTo, _ = strconv.ParseFloat(leadingNumber(to), 64)
	}
	return r
}

func isOOM(m string) bool {
	return strings.Contains(m, "CUDA out of memory") || strings.Contains(m, "OutOfMemoryError") ||
		strings.HasPrefix(m, "Not enough memory") || strings.HasPrefix(m, "Not enough host memory")
}

var startupHeads = []struct{ head, stage string }{
	{"Load weight begin", "load_weight_begin"},
	{"Load weight end", "load_weight_end"},
	{"KV Cache is allocated", "kv_cache"},
	{kvDtypeHead, "kv_cache_dtype"},
	{"Memory pool end", "memory_pool"},
	{"Allocating ", "hicache"},
	{"Capture cuda graph begin", "cuda_graph_begin"},
	{"Capture cuda graph end", "cuda_graph_end"},
	{"max_total_num_tokens=", "scheduler_config"},
	{"Starting vLLM API server", "api_server"},
	// vLLM V1 engine start (a restart appended to an old log begins here):
	// vllm/v1/engine/core.py @ ac3cb2e2 "Initializing a V1 LLM engine (v%s) with config: %s";
	// model_loader "Loading weights took %.2f seconds"; vllm/v1/worker/gpu_model_runner.py
	// @ 000fc94b "Model loading took %.4f GiB and %.6f seconds", "Graph capturing finished in …";
	// compilation "Dynamo bytecode transform time: %.2f s"; core.py "init engine (profile,
	// create kv cache, warmup model) took %.2f seconds"; kv_cache_utils "GPU KV cache size: %s tokens".
	{"Initializing a V1 LLM engine", "engine_init"},
	// a launch's first line: SGLang's engine.py @ 18bfdd16 logger.info(f"{server_args=}"),
	// @ 001067ff f"server_args={server_args.resolved_dict()}" (a dict); vLLM's
	// entrypoints/utils.py @ 00fc8809 log_non_default_args "non-default args: %s"
	{"server_args=ServerArgs(", "launch"},
	{"server_args={", "launch"},
	{"non-default args: ", "launch"},
	{"vLLM API server version", "api_server_version"},
	{"Loading weights took", "load_weight_end"},
	{"Model loading took", "load_weight_end"},
	{"Dynamo bytecode transform time", "compile"},
	{"Capturing CUDA graphs", "cuda_graph_begin"},
	{"Graph capturing finished", "cuda_graph_end"},
	{"init engine (profile, create kv cache, warmup model) took", "engine_ready"},
	{"GPU KV cache size:", "kv_cache"},
	{"Available KV cache memory:", "kv_cache"},
}

// kvDtypeHead starts SGLang's scheduler line
// log_info_on_rank0(logger, f"Using KV cache dtype: {self.kv_cache_dtype}"),
// e.g. "[2025-09-28 17:07:10 TP0] Using KV cache dtype: torch.float8_e5m2".
// It names the KV pool's real dtype when the server info says "auto".
const kvDtypeHead = "Using KV cache dtype: "

// KVDtypeNeedle is a substring of every KV cache dtype line, for a scan
// that looks for candidates before parsing them with KVCacheDtype.
const KVDtypeNeedle = kvDtypeHead

// KVCacheDtype reads an SGLang "Using KV cache dtype: torch.X" log line and
// returns X ("float8_e4m3fn"). ok is false for any other line.
func KVCacheDtype(line string) (dtype string, ok bool) {
	if !strings.Contains(line, kvDtypeHead) {
		return "", false
	}
	ev := ParseServerLine(line)
	if ev.Kind != SStartup || ev.Startup.Stage != "kv_cache_dtype" {
		return "", false
	}
	return ev.Startup.KVCacheDtype, true
}

// isDtypeName accepts a torch dtype name: float8_e4m3fn, bfloat16, uint8.
func isDtypeName(d string) bool {
	if d == "" || len(d) > 64 {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func parseStartup(m string) (Startup, bool) {
	var st Startup
	for _, h := range startupHeads {
		if strings.HasPrefix(m, h.head) {
			st.Stage = h.stage
			break
		}
	}
	if st.Stage == "" && strings.HasPrefix(m, "Capture ") {
		// 2026: "Capture target decode CUDA graph begin. backend=full, …",
		// also target prefill/verify and draft decode/extend
		switch {
		case strings.Contains(m, " CUDA graph begin"):
			st.Stage = "cuda_graph_begin"
		case strings.Contains(m, " CUDA graph end"):
			st.Stage = "cuda_graph_end"
		}
	}
	if st.Stage == "" || (st.Stage == "hicache" && !strings.Contains(m, "hierarchical KV cache")) {
		return st, false
	}
	if _, v, ok := strings.Cut(m, "avail mem="); ok {
		st.AvailMemGB, _ = strconv.ParseFloat(leadingNumber(v), 64)
	}
	switch st.Stage {
	case "kv_cache_dtype":
		d := strings.TrimSpace(m[len(kvDtypeHead):])
		d = strings.TrimPrefix(d, "torch.")
		if !isDtypeName(d) {
			return st, false
		}
		st.KVCacheDtype = d
	case "kv_cache":
		if _, v, ok := strings.Cut(m, "#tokens: "); ok {
			st.KVTokens, _ = strconv.Atoi(leadingNumber(v))
		}
		keys := []string{"K size: ", ", V size: "} // MHA: K and V pools
		if strings.Contains(m, "KV size: ") {
			keys = []string{"KV size: "} // MLA: one pool
		}
		for _, key := range keys {
			if _, v, ok := strings.Cut(m, key); ok {
				gb, _ := strconv.ParseFloat(leadingNumber(v), 64)
				st.KVSizeGB += gb
			}
		}
	case "scheduler_config":
		for _, kv := range strings.Split(m, ", ") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.Atoi(leadingNumber(v))
			switch k {
			case "max_total_num_tokens":
				st.MaxTotalNumTokens = n
			case "max_running_requests":
				st.MaxRunning = n
			case "context_len":
				st.ContextLen = n
			case "available_gpu_mem", "available_cpu_mem":
				st.AvailMemGB, _ = strconv.ParseFloat(leadingNumber(v), 64)
			}
		}
	}
	return st, true
}

// "Loading safetensors checkpoint shards:  50% Completed | 32/64 [00:10<00:10, 3.2it/s]"
func parseBar(line string) (Bar, bool) {
	desc, rest, ok := strings.Cut(line, ": ")
	if !ok {
		return Bar{}, false
	}
	pct, rest, ok := strings.Cut(strings.TrimLeft(rest, " "), "% Completed | ")
	if !ok {
		return Bar{}, false
	}
	p, err := strconv.ParseFloat(pct, 64)
	if err != nil {
		return Bar{}, false
	}
	b := Bar{Desc: desc, Percent: p}
	if f := strings.Fields(rest); len(f) > 0 {
		n, t, _ := strings.Cut(f[0], "/")
		b.N, _ = strconv.Atoi(n)
		b.Total, _ = strconv.Atoi(t)
	}
	return b, true
}

// leadingNumber returns the longest prefix of s that looks like a number.
func leadingNumber(s string) string {
	s = strings.TrimLeft(s, " ")
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || (i == 0 && s[i] == '-')) {
		i++
	}
	return strings.TrimRight(s[:i], ".")
}

// isEngineDeath: vLLM lines that say the engine is gone while the API
// server lives on, which vLLM then stops with uvicorn's ordinary shutdown
// (launcher.py terminate_if_errored sets server.should_exit):
//   - vllm/v1/executor/multiproc_executor.py @ c5c40ab2:
//     "Worker proc %s died unexpectedly, shutting down executor.";
//   - vllm/v1/executor/ray_executor_v2.py @ a76acc98:
//     "RayWorkerProc rank=%s died unexpectedly, shutting down executor.";
//   - vllm/v1/engine/async_llm.py @ 00080ee1: "AsyncLLM output_handler failed." (the
//     engine client's output loop, with EngineDeadError);
//   - vllm/entrypoints/launcher.py (V0 and early V1, CRITICAL):
//     "AsyncLLMEngine has failed, terminating server process",
//     "AsyncLLMEngine is already dead, terminating server process",
//     "MQLLMEngine is already dead, terminating server process".
func isEngineDeath(m string) bool {
	return (strings.HasPrefix(m, "Worker proc ") || strings.HasPrefix(m, "RayWorkerProc ")) && strings.Contains(m, " died unexpectedly") ||
		strings.HasPrefix(m, "AsyncLLM output_handler failed") ||
		strings.Contains(m, "Engine has failed, terminating server process") ||
		strings.Contains(m, "Engine is already dead, terminating server process")
}

func engineDeathComponent(m string) string {
	name, _, _ := strings.Cut(m, " ")
	switch name {
	case "Worker":
		return "Worker"
	case "RayWorkerProc":
		return "RayWorkerProc"
	case "AsyncLLM":
		return "AsyncLLM"
	}
	return name // AsyncLLMEngine, MQLLMEngine
}
