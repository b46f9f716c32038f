package pipeline

import (
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"
)

// A generator for tests of decisions that must not hinge on adjacency: it
// surrounds each deciding record of a log with what real logs interleave
// (health-check access lines, warnings, a request's error traceback,
// progress bars, other ranks' lines), optionally wraps every line the way a
// deployment does, and the state must be the one the bare log gives.

// noise is one family of interleaved lines, in the log's dialect. Their
// own times are before the case's lines (02:58), so that they make no
// figure younger: what is tested is adjacency, not ages.
type noise func(vllm bool, r *rand.Rand) []string

var noiseFamilies = map[string]noise{
	"health": func(vllm bool, r *rand.Rand) []string {
		path := []string{"GET /health", "GET /metrics", "GET /v1/models", "GET /health_generate"}[r.Intn(4)]
		if vllm {
			return []string{fmt.Sprintf("(APIServer pid=4170) INFO:     127.0.0.1:%d - \"%s HTTP/1.1\" 200 OK", 40000+r.Intn(9999), path)}
		}
		return []string{fmt.Sprintf("[2026-11-29 02:58:%02d] INFO:     127.0.0.1:%d - \"%s HTTP/1.1\" 200 OK", r.Intn(60), 40000+r.Intn(9999), path)}
	},
	"warning": func(vllm bool, r *rand.Rand) []string {
		if vllm {
			return []string{"(APIServer pid=4170) WARNING 11-29 02:58:01 [protocol.py:93] The following fields were present in the request but ignored: {'top_k'}"}
		}
		return []string{"[2026-11-29 02:58:01] The tokenizer's chat template has no system role; the system prompt is prepended to the first user turn.",
			"/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: FutureWarning: The pynvml package is deprecated.",
			"  import pynvml  # type: ignore[import]"}
	},
	"traceback": func(vllm bool, r *rand.Rand) []string {
		// a request's error, logged with its traceback: the server goes on
		if vllm {
			p := "(APIServer pid=4170) ERROR 11-29 02:58:02 [serving_chat.py:1130] "
			head := "Error in chat completion stream generator."
			if r.Intn(2) == 0 { // logger.warning(…, exc_info=True): every line under the WARNING prefix
				p, head = "(APIServer pid=4170) WARNING 11-29 02:58:02 [tool_parsers.py:88] ", "Tool parser could not parse the output; returning it as text."
			}
			return []string{p + head, p + "Traceback (most recent call last):",
				p + "  File \"/vllm/entrypoints/openai/serving_chat.py\", line 640, in chat_completion_stream_generator",
				p + "ValueError: This model's maximum context length is 32768 tokens."}
		}
		return []string{"[2026-11-29 02:58:02] Error in request: This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.",
			"[2026-11-29 02:58:02] INFO:     127.0.0.1:5000 - \"POST /generate HTTP/1.1\" 400 Bad Request"}
	},
	"progress": func(vllm bool, r *rand.Rand) []string {
		return []string{fmt.Sprintf("Fetching 8 files: %3d%% Completed | %d/8 [00:0%d<00:00, 4.1it/s]", 100*(r.Intn(8)+1)/8, r.Intn(8)+1, r.Intn(9))}
	},
	"other rank": func(vllm bool, r *rand.Rand) []string {
		if vllm {
			return []string{fmt.Sprintf("(VllmWorker TP%d pid=%d) INFO 11-29 02:58:03 [custom_all_reduce.py:203] Registering 4 cuda graph addresses", 1+r.Intn(7), 500+r.Intn(9))}
		}
		return []string{fmt.Sprintf("[rank%d]:[W1129 02:58:03.123456789 ProcessGroupNCCL.cpp:4561] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment variable is thus deprecated.", 1+r.Intn(7)),
			fmt.Sprintf("[2026-11-29 02:58:03 TP%d] Cache flushed successfully!", 1+r.Intn(7))}
	},
}

// lineWrappers put every line of a log in a deployment's wrapper (the
// parse package's tests hold every wrapper; these are a few of them).
var lineWrappers = map[string]func(string) string{
	"bare":    func(l string) string { return l },
	"compose": func(l string) string { return "sglang-1  | " + l },
	"cri":     func(l string) string { return "2026-11-29T02:59:00.123456789Z stderr F " + l },
	"journal": func(l string) string { return "2026-11-29T02:59:00+0000 gpu1 python3[28059]: " + l },
	"ray":     func(l string) string { return "(pid=77) " + l },
}

var exceptionLine = regexp.MustCompile(`^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b`)

// logRecords splits a log into its records: a traceback's lines, and a vLLM
// message repeated under one prefix, stay one record.
func logRecords(log string) [][]string {
	var out [][]string
	prevHead := ""
	for _, l := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		head := l
		if i := strings.Index(l, "] "); i > 0 {
			head = l[:i]
		}
		cont := len(out) > 0 && (strings.HasPrefix(l, " ") || exceptionLine.MatchString(l) ||
			strings.HasPrefix(l, "(") && (head == prevHead || !strings.Contains(l, "] ") && !strings.Contains(l, "INFO:")))
		prevHead = head
		if cont {
			out[len(out)-1] = append(out[len(out)-1], l)
			continue
		}
		out = append(out, []string{l})
	}
	return out
}

// interleave puts 0–3 noise lines of the families around each record.
func interleave(log string, vllm bool, families []string, r *rand.Rand) string {
	var b strings.Builder
	put := func() {
		for n := r.Intn(4); n > 0; n-- {
			for _, l := range noiseFamilies[families[r.Intn(len(families))]](vllm, r) {
				b.WriteString(l + "\n")
			}
		}
	}
	for _, rec := range logRecords(log) {
		put()
		for _, l := range rec {
			b.WriteString(l + "\n")
		}
	}
	put()
	return b.String()
}

func wrapAll(log string, wrap func(string) string) string {
	if log == "" {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		b.WriteString(wrap(l) + "\n")
	}
	return b.String()
}

// stateCases are logs that decide each state the log can decide (down
// and unknown need no log: the probes decide them).
func stateCases() []struct {
	name, first, then string
	vllm              bool
	state             ServerState
} {
	sgStart := "[2026-11-29 02:59:00 TP0] Load weight begin. avail mem=70.00 GB\n"
	return []struct {
		name, first, then string
		vllm              bool
		state             ServerState
	}{
		{"starting", sgStart, "[2026-11-29 02:59:30 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB\n", false, ServerStarting},
		{"starting after a vLLM restart", vlServing, "(EngineCore_DP0 pid=199) INFO 11-29 03:00:20 [core.py:109] Initializing a V1 LLM engine (v0.20.2) with config: model='m'\n", true, ServerStarting},
		{"ready (idle)", sgDecodeRun(), accessLines(0, 20, "GET /health"), false, ServerReady},
		{"busy", sgServing, "[2026-11-29 03:00:01 TP0] Decode batch, #running-req: 10, #token: 100, token usage: 0.30, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 1\n", false, ServerBusy},
		{"busy vLLM", vlServing, strings.Replace(vlServing[strings.Index(vlServing, "\n")+1:], "02:59:50", "03:00:01", 1), true, ServerBusy},
		{"unhealthy", sgServing, "[2026-11-29 03:00:01] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 03:00:00. last_heartbeat time: 02:59:40\n", false, ServerUnhealthy},
		{"hung", sgServing, "[rank0]:[E1129 03:00:01.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.\n", false, ServerHung},
		{"hung vLLM", vlServing, fmtLines(vlStuck, 0, 10, 20), true, ServerHung},
		{"stopped", sgServing, sgSigterm + "[2026-11-29 03:00:02] Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[].\n", false, ServerStopped},
		{"stopped vLLM", vlServing, vlLauncherStop + uvicornShutdown, true, ServerStopped},
		{"crashed", sgServing, sgException + "[2026-11-29 03:00:02] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n", false, ServerCrashed},
		{"crashed, then stopped", sgServing, sgException + sgSigterm + "[2026-11-29 03:00:03] INFO:     Shutting down\n", false, ServerCrashed},
		{"crashed vLLM, then stopped", vlServing, vlWorkerDied + vlLauncherStop + uvicornShutdown, true, ServerCrashed},
	}
}

// seeds per state and wrapper: each draws its own noise around each record.
const seeds = 3

// Each state, its deciding lines surrounded by every family of noise and
// wrapped or not, is the state the bare log gives.
func TestDecisionsDoNotHingeOnAdjacency(t *testing.T) {
	t.Parallel()
	var families []string
	for f := range noiseFamilies {
		families = append(families, f)
	}
	runs := 0
	for _, tc := range stateCases() {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{}
			if tc.state == ServerReady {
				o.ServerURL = healthOnly(t) // idle needs /health answering
			}
			if s := serverAfter(t, tc.first, tc.then, o); s.Server.State != tc.state {
				t.Fatalf("the bare log reads %q (%s), want %q", s.Server.State, s.Server.Reason, tc.state)
			}
			for wname, wrap := range lineWrappers {
				for seed := int64(1); seed <= seeds; seed++ {
					r := rand.New(rand.NewSource(seed))
					first := wrapAll(interleave(tc.first, tc.vllm, families, r), wrap)
					then := wrapAll(interleave(tc.then, tc.vllm, families, r), wrap)
					s := serverAfter(t, first, then, o)
					runs++
					if s.Server.State != tc.state {
						t.Fatalf("%s, seed %d: %q (%s), want %q; the log:\n%s%s", wname, seed, s.Server.State, s.Server.Reason, tc.state, first, then)
					}
				}
			}
		})
	}
	t.Logf("%d states × %d wrappers × %d seeds: %d interleaved logs", len(stateCases()), len(lineWrappers), seeds, runs)
}
