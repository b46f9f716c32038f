// Package sim is an SGLang stand-in for tests, benchmarks and the demo. From
// the outside it behaves like an SGLang server: the same endpoints, a finite
// token rate and capacity (requests beyond it queue), realistic completion
// lengths, and a log with startup, ready and scheduler lines in a chosen
// version's format. Faults can be injected. Product code never imports it,
// except the demo and the sim subcommand.
package sim

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options shape the simulated server.
type Options struct {
	Model       string        // model path reported by the server
	Speed       float64       // time compression: 10 makes everything 10x faster
	Capacity    int           // max running requests; more queue (default 256)
	TokPerSec   float64       // decode speed of one request at Speed 1 (default 40)
	ShortMean   int           // mean completion tokens for short requests (default 250)
	LongMean    int           // mean completion tokens for long requests (default 3800)
	LongAbove   int           // max_tokens above this means a LONG request (default 16384)
	MaxTotal    int           // KV pool size in tokens (default Capacity*4096)
	Format      string        // log format: 2026 (default), v0.5, v0.4, v0.3, dp
	DP          int           // ranks for the dp format (default 2)
	LogInterval time.Duration // scheduler log period at Speed 1 (default 2s)
	Instant     bool          // answer at once with a tiny completion (benchmarks)
	// Load models SGLang's scheduler under load (engine.go): a KV pool of
	// MaxTotal tokens (default 190,000 then), admission by the prefill
	// adder's budget, a decode step whose time grows with the batch and the
	// tokens it reads, retraction when the pool runs out. TokPerSec is then
	// unused: the batch sets the pace. Calibrated on the users' night
	// (~930 tok/s with ~72 LONG requests at token usage 0.96): LONG work
	// (prompts ~500 tokens, answers ~3,800, max 10,240) settles at ~68
	// running, ~925 tok/s, usage 0.90 on average and >= 0.95 a quarter of
	// the time, with retractions; SHORT work (~250 tokens) runs ~230 at once
	// at ~1,740 tok/s; 16 LONG in flight give ~400 tok/s
	// (TestEngineCalibration). Speed (--time-scale) compresses it.
	Load bool
	// Cost is the load model's step-time curve and prefill speed (zero:
	// DefaultLoadCost); AnswerDist how answer lengths spread around their
	// mean: "uniform" (default, 0.6–1.4 × the mean), "exp" (exponential,
	// ShareGPT-like: many short, a long tail cut at max_tokens) or
	// "lognormal" (σ 0.8). shapes.go names a family of servers.
	Cost       LoadCost
	AnswerDist string
	// LongShare makes that fraction of requests answer at LongMean whatever
	// their max_tokens (a mixed category); the rest follow LongAbove.
	LongShare    float64
	ContentBytes int // if > 0, pad each completion's content to this size
	ServerInfo   map[string]any
	Log          io.Writer // the SGLang log (logs/sglang_inference.log); nil discards

	// Flavor is "sglang" (default) or "vllm": which server's endpoints,
	// field names, metrics and auth rules the sim copies.
	Flavor string
	// ReasoningContentAlias makes the vllm flavour send reasoning_content
	// beside reasoning (vLLM 0.11.x kept the old name as an alias).
	ReasoningContentAlias bool
	// DisconnectHold is how long a client's disconnect goes unnoticed, at
	// Speed 1 (default 4s, SGLANG_REQUEST_STATE_WAIT_TIMEOUT); negative: at once.
	DisconnectHold time.Duration
	// IncrementalStreaming makes /generate streams send deltas of text and
	// output_ids (--incremental-streaming-output); by default both are cumulative.
	IncrementalStreaming bool
	// StreamOutput2025 copies a late-2025 SGLang started with --stream-output:
	// /generate streams keep the text cumulative but send output_ids as deltas.
	StreamOutput2025 bool
	// DropStreamInterval ignores /generate's sampling_params.stream_interval,
	// as the Shepherd Model Gateway (smg) in front of SGLang does: streams
	// send one cumulative chunk per token (interval.go).
	DropStreamInterval bool
	// NoTokenizeMessages makes /v1/tokenize take only "prompt", as 2025 builds.
	NoTokenizeMessages bool
	APIKey             string // if set, Authorization: Bearer <key> is required
	// NoMetrics serves no /metrics, as SGLang started without
	// --enable-metrics: the scheduler's state is then only in its log.
	NoMetrics       bool
	KVCacheDType    string // --kv-cache-dtype (default auto)
	ResolvedKVDType string // if set, log "Using KV cache dtype: <this>" at startup
}

// Faults are injected per request; the zero value injects none.
type Faults struct {
	ErrorRate  float64 // answer 503
	ResetRate  float64 // reset the connection
	HangRate   float64 // never answer
	StallMatch string  // requests whose body contains this never answer
	// AbortRate answers that fraction with HTTP 200 and finish_reason abort
	// after part of the completion, as weight updates and /abort_request do.
	AbortRate float64
	// StallMidStream makes that fraction of streamed requests stop sending
	// after StallAfterChunks chunks (default 2), without closing.
	StallMidStream   float64
	StallAfterChunks int
	// StreamErrorRate ends that fraction of streams with an error chunk.
	StreamErrorRate float64
	// EndlessBytes makes every request stream deltas of this many bytes,
	// one a millisecond, and never finish, whatever max_tokens says: a
	// broken or hostile server or proxy (endless.go).
	EndlessBytes int
}

// Server is a running simulated SGLang server.
type Server struct {
	opts Options
	addr string

	mu          sync.Mutex
	srv         *http.Server
	ready       bool
	faults      Faults
	refault     chan struct{} // closed (and replaced) by SetFaults: requests held by a fault look again
	running     int
	queued      int
	used        int // KV tokens held by running requests
	admitted    int // since the last prefill log line
	newTok      int
	counts      counters
	lat         *latHists // request latency histograms (latency.go)
	slots       chan struct{}
	sched       *scheduler // the load model (Options.Load), else nil
	lastRetract int        // the last retraction's count (sglang:num_retracted_reqs)
	logMu       sync.Mutex
	live        map[string]*liveReq // SGLang's TokenizerManager.rid_to_state
	lastIDs     []int
	stop        chan struct{}
	stopOnce    sync.Once
	wg          sync.WaitGroup
}

type counters struct {
	prompt, gen, requests, aborted, retracted float64
}

// LoadMaxTotal is the KV pool of a Load server unless MaxTotal says.
const LoadMaxTotal = 190000

// New returns a server; Start makes it listen.
func New(o Options) *Server {
	if o.Speed <= 0 {
		o.Speed = 1
	}
	if o.Capacity <= 0 {
		o.Capacity = 256
	}
	if o.TokPerSec <= 0 {
		o.TokPerSec = 40
	}
	if o.ShortMean <= 0 {
		o.ShortMean = 250
	}
	if o.LongMean <= 0 {
		o.LongMean = 3800
	}
	if o.LongAbove <= 0 {
		o.LongAbove = 16384
	}
	if o.Cost == (LoadCost{}) {
		o.Cost = DefaultLoadCost
	}
	if o.MaxTotal <= 0 && o.Load && !o.Instant {
		o.MaxTotal = LoadMaxTotal
	}
	if o.MaxTotal <= 0 {
		o.MaxTotal = o.Capacity * 4096
	}
	if o.Format == "" {
		o.Format = "2026"
	}
	if o.DP <= 0 {
		o.DP = 2
	}
	if o.LogInterval <= 0 {
		o.LogInterval = 2 * time.Second
	}
	if o.Model == "" {
		o.Model = "/shared/kimi-k2.5-int4"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Flavor == "" {
		o.Flavor = "sglang"
	}
	if o.DisconnectHold == 0 {
		o.DisconnectHold = 4 * time.Second
	}
	if o.KVCacheDType == "" {
		o.KVCacheDType = "auto"
	}
	return &Server{opts: o, slots: make(chan struct{}, o.Capacity), stop: make(chan struct{}), live: map[string]*liveReq{}, refault: make(chan struct{})}
}

// Start listens on addr (host:port, port 0 for any) and writes the startup
// lines. The server reports ready after a short, speed-scaled warmup.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sim listen: %w", err)
	}
	s.addr = ln.Addr().String()
	if s.opts.Load && !s.opts.Instant {
		s.startScheduler()
	}
	s.serve(ln)
	s.wg.Add(1)
	go s.logLoop()
	return nil
}

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.addr }

// Addr is host:port.
func (s *Server) Addr() string { return s.addr }

// SetFaults replaces the injected faults. Requests held by StallMatch
// that the new faults no longer match are released: they are decoded and
// answered as if they had just been admitted.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	s.faults = f
	close(s.refault)
	s.refault = make(chan struct{})
	s.mu.Unlock()
}

func (s *Server) serve(ln net.Listener) {
	// IdleTimeout: uvicorn.run(..., timeout_keep_alive=5) in SGLang's
	// python/sglang/srt/entrypoints/http_server.py (launch_server).
	srv := &http.Server{Handler: s.auth(s.mux()), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Second}
	s.mu.Lock()
	s.srv, s.ready = srv, false
	s.mu.Unlock()
	s.startupLines()
	go func() { _ = srv.Serve(ln) }()
	warm := s.scaled(3 * time.Second)
	if s.opts.Instant {
		warm = 0
	}
	time.AfterFunc(warm, func() {
		s.mu.Lock()
		if s.srv != srv {
			s.mu.Unlock()
			return
		}
		s.ready = true
		s.mu.Unlock()
		s.logf("", "INFO:     127.0.0.1:%d - \"GET /model_info HTTP/1.1\" 200 OK", 40000+rand.IntN(9999))
		s.logf("", "The server is fired up and ready to roll!")
	})
}

// Down refuses connections for d (the listener is closed, in-flight requests
// are cut), then comes back on the same address with fresh startup lines.
func (s *Server) Down(d time.Duration) {
	s.mu.Lock()
	srv := s.srv
	s.srv, s.ready = nil, false
	s.mu.Unlock()
	s.abortAll() // the process died: no request state survives
	if s.sched != nil {
		s.sched.reset()
	}
	if srv != nil {
		_ = srv.Close()
	}
	go func() {
		select {
		case <-time.After(d):
		case <-s.stop:
			return
		}
		for i := 0; i < 100; i++ {
			ln, err := net.Listen("tcp", s.addr)
			if err == nil {
				s.serve(ln)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

// Crash writes a scheduler traceback to the log, as SGLang does when it
// dies, and goes down for d.
func (s *Server) Crash(d time.Duration) {
	s.logf(" TP0", "Scheduler hit an exception: Traceback (most recent call last):")
	s.raw(`  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2873, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1005, in event_loop_overlap
    batch_result = self.run_batch(batch)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB. GPU 0 has a total capacity of 93.02 GiB of which 1.18 GiB is free.
`)
	s.logf("", "Received sigquit from a child process. It usually means the child failed.")
	s.Down(d)
}

// Close stops the server for good.
func (s *Server) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
	s.wg.Wait()
}

func (s *Server) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) / s.opts.Speed)
}

func (s *Server) isReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// completionLen draws a completion length around the class mean.
func (s *Server) completionLen(maxTokens int) (n int, finish string) {
	mean := s.opts.ShortMean
	if maxTokens > s.opts.LongAbove || rand.Float64() < s.opts.LongShare {
		mean = s.opts.LongMean
	}
	n = answerLen(rand.Float64, rand.NormFloat64, mean, s.opts.AnswerDist)
	if maxTokens > 0 && n >= maxTokens {
		return maxTokens, "length"
	}
	return max(n, 1), "stop"
}

// admit waits for a slot (queueing beyond capacity) and books the request;
// it reports false if the request was aborted while it waited.
func (s *Server) admit(l *liveReq, tokens int) bool {
	s.mu.Lock()
	s.queued++
	s.mu.Unlock()
	select {
	case s.slots <- struct{}{}:
	case <-l.abort:
		s.mu.Lock()
		s.queued--
		s.mu.Unlock()
		return false
	case <-s.stop:
		s.mu.Lock()
		s.queued--
		s.mu.Unlock()
		return false
	}
	s.mu.Lock()
	s.queued--
	s.running++
	s.used += tokens
	s.admitted++
	s.newTok += tokens / 4
	s.mu.Unlock()
	return true
}

func (s *Server) release(tokens int) {
	<-s.slots
	s.mu.Lock()
	s.running--
	s.used -= tokens
	s.mu.Unlock()
}

// count adds a request that ended to the counters. Its generated tokens
// count however it ended, as SGLang's do: the tokenizer manager's
// collect_metrics calls observe_one_finished_request with the request's
// completion_tokens once state.finished, an abort being a finish, and that
// adds them to sglang:generation_tokens_total (python/sglang/srt/metrics/
// collector.py @ 00ae9c15, TokenizerMetricsCollector). The worker's
// wasted-token ledger sets this counter against what it streamed.
func (s *Server) count(promptTok, genTok int, ok bool) {
	s.mu.Lock()
	s.counts.gen += float64(genTok)
	if ok {
		s.counts.requests++
		s.counts.prompt += float64(promptTok)
	} else {
		s.counts.aborted++
	}
	s.mu.Unlock()
}

// words makes plausible text of about n tokens (4 bytes a token).
func words(n int) string {
	vocab := []string{"the", "function", "returns", "a", "value", "because", "we", "first", "check", "input", "then", "loop", "over", "items", "and", "compute", "result", "so"}
	var b strings.Builder
	for b.Len() < n*4 {
		b.WriteString(vocab[rand.IntN(len(vocab))])
		b.WriteByte(' ')
	}
	return b.String()
}
