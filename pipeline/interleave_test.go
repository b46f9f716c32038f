package pipeline

import (
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// A generator for tests of decisions that must not hinge on adjacency: it
// surrounds each deciding record of a log with what real logs interleave
// (health-check access lines, warnings, a request's error traceback,
// progress bars, other ranks' lines), optionally wraps every line the way a
// deployment does, and the state must be the one the bare log gives.

// noise is one family of interleaved lines, in the log's dialect, stamped
// at "HH:MM:SS" (interleave picks a time between the records it sits
// between, so that noise neither precedes nor follows the case's lines
// in time: it is interleaved in time as in order, and makes no periodic
// line younger than the record after it would).
type noise func(vllm bool, r *rand.Rand, at string) []string

var noiseFamilies = map[string]noise{
	"health": func(vllm bool, r *rand.Rand, at string) []string {
		path := []string{"GET /health", "GET /metrics", "GET /v1/models", "GET /health_generate"}[r.Intn(4)]
		if vllm { // vLLM's uvicorn access lines carry no time
			return []string{fmt.Sprintf("(APIServer pid=4170) INFO:     127.0.0.1:%d - \"%s HTTP/1.1\" 200 OK", 40000+r.Intn(9999), path)}
		}
		return []string{fmt.Sprintf("[2026-11-29 %s] INFO:     127.0.0.1:%d - \"%s HTTP/1.1\" 200 OK", at, 40000+r.Intn(9999), path)}
	},
	"warning": func(vllm bool, r *rand.Rand, at string) []string {
		if vllm {
			return []string{"(APIServer pid=4170) WARNING 11-29 " + at + " [protocol.py:93] The following fields were present in the request but ignored: {'top_k'}"}
		}
		return []string{"[2026-11-29 " + at + "] The tokenizer's chat template has no system role; the system prompt is prepended to the first user turn.",
			"/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: FutureWarning: The pynvml package is deprecated.",
			"  import pynvml  # type: ignore[import]"}
	},
	"traceback": func(vllm bool, r *rand.Rand, at string) []string {
		// a request's error, logged with its whole traceback: the server goes on
		if vllm {
			p := "(APIServer pid=4170) ERROR 11-29 " + at + " [serving_chat.py:1130] "
			head := "Error in chat completion stream generator."
			if r.Intn(2) == 0 { // logger.warning(…, exc_info=True): every line under the WARNING prefix
				p, head = "(APIServer pid=4170) WARNING 11-29 "+at+" [tool_parsers.py:88] ", "Tool parser could not parse the output; returning it as text."
			}
			return []string{p + head, p + "Traceback (most recent call last):",
				p + "  File \"/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py\", line 640, in chat_completion_stream_generator",
				p + "    async for res in result_generator:",
				p + "  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py\", line 402, in generate",
				p + "    q = await self.add_request(",
				p + "ValueError: This model's maximum context length is 32768 tokens."}
		}
		if r.Intn(2) == 0 { // SGLang's http_server.py: logged without a traceback, then the 400
			return []string{"[2026-11-29 " + at + "] [http_server] Error: The input (40000 tokens) is longer than the model's context length (32768 tokens).",
				"[2026-11-29 " + at + "] INFO:     127.0.0.1:5000 - \"POST /generate HTTP/1.1\" 400 Bad Request"}
		}
		// uvicorn's "Exception in ASGI application" (httptools_impl.py
		// run_asgi: logger.error(msg, exc_info=exc)): the traceback's lines
		// carry no prefix of their own
		return []string{"[2026-11-29 " + at + "] ERROR:    Exception in ASGI application",
			"Traceback (most recent call last):",
			"  File \"/usr/local/lib/python3.12/dist-packages/uvicorn/protocols/http/httptools_impl.py\", line 409, in run_asgi",
			"    result = await app(  # type: ignore[func-returns-value]",
			"  File \"/usr/local/lib/python3.12/dist-packages/starlette/routing.py\", line 73, in app",
			"    response = await f(request)",
			"  File \"/sgl-workspace/sglang/python/sglang/srt/entrypoints/http_server.py\", line 540, in generate_request",
			"    ret = await _global_state.tokenizer_manager.generate_request(obj, request).__anext__()",
			"ValueError: The input (40000 tokens) is longer than the model's context length (32768 tokens).",
			"[2026-11-29 " + at + "] INFO:     127.0.0.1:5000 - \"POST /generate HTTP/1.1\" 500 Internal Server Error"}
	},
	"progress": func(vllm bool, r *rand.Rand, at string) []string {
		return []string{fmt.Sprintf("Fetching 8 files: %3d%% Completed | %d/8 [00:0%d<00:00, 4.1it/s]", 100*(r.Intn(8)+1)/8, r.Intn(8)+1, r.Intn(9))}
	},
	"other rank": func(vllm bool, r *rand.Rand, at string) []string {
		if vllm {
			return []string{fmt.Sprintf("(VllmWorker TP%d pid=%d) INFO 11-29 %s [custom_all_reduce.py:203] Registering 4 cuda graph addresses", 1+r.Intn(7), 500+r.Intn(9), at)}
		}
		return []string{fmt.Sprintf("[rank%d]:[W1129 %s.123456789 ProcessGroupNCCL.cpp:4561] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment variable is thus deprecated.", 1+r.Intn(7), at),
			fmt.Sprintf("[2026-11-29 %s TP%d] Cache flushed successfully!", at, 1+r.Intn(7))}
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

// recordTime finds a record's own time of day ("03:00:01"), in seconds.
var recordTime = regexp.MustCompile(`(?:2026-11-29 |11-29 |[WE]1129 )(\d\d):(\d\d):(\d\d)`)

func secondsOf(rec []string) (int, bool) {
	m := recordTime.FindStringSubmatch(rec[0])
	if m == nil {
		return 0, false
	}
	h, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	sec, _ := strconv.Atoi(m[3])
	return h*3600 + mi*60 + sec, true
}

// interleave puts 0–3 noise lines of the families around each record,
// each stamped at a time between the records before and after it (from
// the first: the time the log before this part ended, -1 for none); it
// returns the log and the time its last record was stamped.
func interleave(log string, vllm bool, families []string, r *rand.Rand, from int) (string, int) {
	recs := logRecords(log)
	times := make([]int, len(recs))
	prev := from
	for i, rec := range recs {
		if sec, ok := secondsOf(rec); ok {
			prev = sec
		}
		times[i] = prev // a record without a time of its own keeps the one before
	}
	var b strings.Builder
	put := func(lo, hi int) {
		switch {
		case lo < 0 && hi < 0:
			lo, hi = 2*3600+58*60, 2*3600+58*60 // no time anywhere: 02:58:00
		case lo < 0:
			lo = hi
		case hi < lo:
			hi = lo
		}
		for n := r.Intn(4); n > 0; n-- {
			sec := lo + r.Intn(hi-lo+1)
			at := fmt.Sprintf("%02d:%02d:%02d", sec/3600, sec/60%60, sec%60)
			for _, l := range noiseFamilies[families[r.Intn(len(families))]](vllm, r, at) {
				b.WriteString(l + "\n")
			}
		}
	}
	lo := from
	for i, rec := range recs {
		hi := -1
		if sec, ok := secondsOf(rec); ok {
			hi = sec
		}
		if hi < 0 && lo >= 0 {
			hi = lo
		}
		put(lo, hi)
		for _, l := range rec {
			b.WriteString(l + "\n")
		}
		lo = times[i]
	}
	put(lo, lo) // after the last record: at its time, making nothing younger
	return b.String(), lo
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

// stateCase is a log that decides a state, with the probe's answer it
// needs: "" nothing listens, "health" /health answers (no /metrics), "eof"
// the port takes the connection and closes it (neither an answer nor a
// refusal). quiet: the log last grew 2 minutes before the first poll (and
// then is empty); noLog: there is no server log at all.
type stateCase struct {
	name, first, then string
	vllm              bool
	state             snapshot.ServerState
	probe             string
	quiet, noLog      bool
}

// stateCases are logs that decide each state there is.
func stateCases() []stateCase {
	sgStart := "[2026-11-29 02:59:00 TP0] Load weight begin. avail mem=70.00 GB\n"
	// one long prompt chunk-prefilled on a prefill-only server: #new-seq 1,
	// nothing running or queued, a chunk every 20 s, health checks between
	// (metrics_reporter.py @ c9cbe8f2)
	chunk := "[2026-11-29 03:00:%02d DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: 0.05, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 410.00\n"
	return []stateCase{
		{name: "starting", first: sgStart, then: "[2026-11-29 02:59:30 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB\n", state: snapshot.ServerStarting},
		{name: "starting after a vLLM restart", first: vlServing, then: "(EngineCore_DP0 pid=199) INFO 11-29 03:00:20 [core.py:109] Initializing a V1 LLM engine (v0.20.2) with config: model='m'\n", vllm: true, state: snapshot.ServerStarting},
		{name: "ready (idle)", first: sgDecodeRun(), then: accessLines(0, 20, "GET /health"), state: snapshot.ServerReady, probe: "health"},
		{name: "ready (idle) a minute on", first: sgDecodeRun(), then: accessLines(0, 59, "GET /health"), state: snapshot.ServerReady, probe: "health"},
		{name: "ready (idle) after a prefill-only server answered its requests", first: "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n" +
			fmtLines("[2026-11-29 02:59:%02d DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 900, #cached-token: 100, token usage: 0.02, #running-req: 0, #queue-req: 0, #bootstrap-req: 0, #inflight-req: 0, input throughput (token/s): 900.00\n"+
				"[2026-11-29 02:59:%02d] INFO:     127.0.0.1:5000 - \"POST /generate HTTP/1.1\" 200 OK\n", 40, 41, 42, 43, 44, 45),
			then: accessLines(0, 20, "GET /health"), state: snapshot.ServerReady, probe: "health"},
		{name: "busy", first: sgServing, then: "[2026-11-29 03:00:01 TP0] Decode batch, #running-req: 10, #token: 100, token usage: 0.30, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 1\n", state: snapshot.ServerBusy},
		{name: "busy vLLM", first: vlServing, then: strings.Replace(vlServing[strings.Index(vlServing, "\n")+1:], "02:59:50", "03:00:01", 1), vllm: true, state: snapshot.ServerBusy},
		{name: "busy chunk-prefilling one long prompt", first: "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n",
			then: fmtLines(chunk, 0, 20, 40) + accessLines(41, 55, "GET /health"), state: snapshot.ServerBusy, probe: "health"},
		{name: "unhealthy", first: sgServing, then: "[2026-11-29 03:00:01] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 03:00:00. last_heartbeat time: 02:59:40\n", state: snapshot.ServerUnhealthy},
		{name: "hung", first: sgServing, then: "[rank0]:[E1129 03:00:01.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.\n", state: snapshot.ServerHung},
		{name: "hung vLLM", first: vlServing, then: fmtLines(vlStuck, 0, 10, 20), vllm: true, state: snapshot.ServerHung},
		{name: "down: a serving log gone quiet, nothing listening", first: sgServing + "[2026-11-29 02:59:51 TP0] Decode batch, #running-req: 10, #token: 100, token usage: 0.30, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 1\n",
			state: snapshot.ServerDown, quiet: true},
		{name: "down vLLM", first: vlServing, vllm: true, state: snapshot.ServerDown, quiet: true},
		{name: "unknown: no log, no answer", state: snapshot.ServerUnknown, probe: "eof", noLog: true},
		{name: "stopped", first: sgServing, then: sgSigterm + "[2026-11-29 03:00:02] Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[].\n", state: snapshot.ServerStopped},
		{name: "stopped vLLM", first: vlServing, then: vlLauncherStop + uvicornShutdown, vllm: true, state: snapshot.ServerStopped},
		{name: "crashed", first: sgServing, then: sgException + "[2026-11-29 03:00:02] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n", state: snapshot.ServerCrashed},
		{name: "crashed, then stopped", first: sgServing, then: sgException + sgSigterm + "[2026-11-29 03:00:03] INFO:     Shutting down\n", state: snapshot.ServerCrashed},
		{name: "crashed vLLM, then stopped", first: vlServing, then: vlWorkerDied + vlLauncherStop + uvicornShutdown, vllm: true, state: snapshot.ServerCrashed},
	}
}

// eofURL takes each connection and closes it: no answer and no refusal.
func eofURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return "http://" + l.Addr().String()
}

// stateAfter is serverAfter for a stateCase: the log written (or not), its
// age, the probe.
func stateAfter(t *testing.T, tc stateCase, first, then string) snapshot.Snapshot {
	t.Helper()
	o := Options{}
	switch tc.probe {
	case "health":
		o.ServerURL = healthOnly(t)
	case "eof":
		o.ServerURL = eofURL(t)
	}
	c := newClock()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
	log := filepath.Join(root, "logs", "sglang_inference.log")
	c.t = time.Now()
	if !tc.noLog {
		write(t, log, first)
		mt := c.t
		if tc.quiet {
			mt = c.t.Add(-2 * time.Minute)
		}
		must(t, os.Chtimes(log, mt, mt))
	}
	w := localWatcher(t, root, c, o)
	poll(w)
	c.advance(2 * time.Second)
	if then != "" {
		appendTo(t, log, then)
		must(t, os.Chtimes(log, c.t, c.t))
	}
	poll(w)
	c.advance(2 * time.Second)
	return poll(w)
}

// seeds per state and wrapper: each draws its own noise around each record.
const seeds = 3

// Each state, its deciding lines surrounded by every family of noise
// (stamped among them in time) and wrapped or not, is the state the bare
// log gives. A state without a log (unknown) has nothing to surround: it
// is run bare, once per wrapper and seed all the same.
func TestDecisionsDoNotHingeOnAdjacency(t *testing.T) {
	t.Parallel()
	var families []string
	for f := range noiseFamilies {
		families = append(families, f)
	}
	sort.Strings(families) // the seeds draw the same noise every run
	runs := 0
	for _, tc := range stateCases() {
		t.Run(tc.name, func(t *testing.T) {
			if s := stateAfter(t, tc, tc.first, tc.then); s.Server.State != tc.state {
				t.Fatalf("the bare log reads %q (%s), want %q", s.Server.State, s.Server.Reason, tc.state)
			}
			for _, wname := range sortedKeys(lineWrappers) {
				wrap := lineWrappers[wname]
				for seed := int64(1); seed <= seeds; seed++ {
					r := rand.New(rand.NewSource(seed))
					var first, then string
					if !tc.noLog {
						f, end := interleave(tc.first, tc.vllm, families, r, -1)
						first = wrapAll(f, wrap)
						if tc.then != "" {
							th, _ := interleave(tc.then, tc.vllm, families, r, end)
							then = wrapAll(th, wrap)
						}
					}
					s := stateAfter(t, tc, first, then)
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

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}
