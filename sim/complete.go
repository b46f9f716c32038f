package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"
)

// SamplingParamsFields are the fields of SGLang's SamplingParams
// (sgl-project/sglang, python/sglang/srt/sampling/sampling_params.py,
// class SamplingParams). TokenizerManager._create_tokenized_object calls
// SamplingParams(**sampling_kwargs), so any other key is a TypeError, which
// the /generate handler does not catch: HTTP 500. Exported for tests only.
var SamplingParamsFields = []string{
	"max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k", "min_p",
	"frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n", "json_schema",
	"regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens",
	"no_stop_trim", "custom_params", "stream_interval", "logit_bias", "sampling_seed",
}

// request holds what the sim reads of a chat or /generate body. Unknown
// top-level fields are ignored, as pydantic's default for
// ChatCompletionRequest (python/sglang/srt/entrypoints/openai/protocol.py).
type request struct {
	RID                 string                     `json:"rid"`
	Model               string                     `json:"model"`
	Messages            json.RawMessage            `json:"messages"`
	Text                json.RawMessage            `json:"text"`
	InputIDs            json.RawMessage            `json:"input_ids"`
	MaxTokens           int                        `json:"max_tokens"`
	MaxCompletionTokens int                        `json:"max_completion_tokens"`
	Stream              bool                       `json:"stream"`
	Sampling            map[string]json.RawMessage `json:"sampling_params"`
	StreamOptions       struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// piece is what one decode step hands the client: one stream chunk.
type piece struct {
	reasoning bool
	text      string
	ids       []int
}

// job is one planned completion, faults included.
type job struct {
	chat, stream, usage bool
	id, model           string
	promptTok, n        int
	maxNew              int    // max_new_tokens as the scheduler reads it
	finish              string // stop or length, when it runs to the end
	pieces              []piece
	hang                bool   // never answered (HangRate): until the client goes away
	stalled             []byte // held by StallMatch (the body it matched): until the fault is cleared
	abortAt             int    // after this many pieces: 200 + abort (0: never)
	gapAt               int    // stream: no chunk after this many (0: never)
	errAt               int    // stream: an error chunk after this many (0: never)
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": map[string]any{"message": "use POST"}})
		return
	}
	if !s.isReady() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{"message": "server is starting"}})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	var req request
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	chat := r.URL.Path == "/v1/chat/completions"
	switch {
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "invalid JSON: " + err.Error()}})
		return
	case chat && len(req.Messages) == 0:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "messages is required"}})
		return
	case !chat && len(req.Text) == 0 && len(req.InputIDs) == 0:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "text or input_ids is required"}})
		return
	}
	if !chat {
		for k := range req.Sampling {
			if !slices.Contains(SamplingParamsFields, k) {
				internalError(w, req.Stream)
				return
			}
		}
	}
	if s.injectFault(w, r) {
		return
	}
	if n := s.endlessBytes(); n > 0 {
		endless(w, r, chat, n)
		return
	}
	rid := req.RID
	if rid == "" {
		rid = newRID()
	}
	l, err := s.register(rid)
	if err != nil {
		s.badRequest(w, chat, req.Stream, err.Error())
		return
	}
	defer s.unregister(l)
	go s.watchDisconnect(r.Context(), l)
	if !chat && len(req.InputIDs) > 0 {
		var ids []int
		if json.Unmarshal(req.InputIDs, &ids) == nil {
			s.mu.Lock()
			s.lastIDs = ids
			s.mu.Unlock()
		}
	}
	j := s.plan(&req, chat, l, body)
	s.run(newOutput(s, w, j), l, j)
}

// plan draws the completion and the faults of one request.
func (s *Server) plan(req *request, chat bool, l *liveReq, body []byte) *job {
	j := &job{chat: chat, stream: req.Stream, usage: req.StreamOptions.IncludeUsage, id: l.rid, model: req.Model}
	if s.vllm() {
		j.id = "chatcmpl-" + l.key
	}
	if j.model == "" {
		j.model = s.opts.Model
	}
	maxTokens := firstNonZero(req.MaxCompletionTokens, req.MaxTokens)
	if !chat {
		_ = json.Unmarshal(req.Sampling["max_new_tokens"], &maxTokens)
	}
	j.promptTok = max(len(req.Messages)+len(req.Text)+len(req.InputIDs), 4) / 4
	j.maxNew = maxTokens
	if j.maxNew <= 0 {
		j.maxNew = clipMaxNew
	}
	j.n, j.finish = 2, "stop"
	if !s.opts.Instant {
		j.n, j.finish = s.completionLen(maxTokens)
	}
	j.pieces = s.pieces(j.n, s.streamEvery(req, chat))
	s.mu.Lock()
	f := s.faults
	s.mu.Unlock()
	last := max(len(j.pieces)-1, 1)
	if stallMatches(f, body) {
		j.stalled = body
	}
	j.hang = rand.Float64() < f.HangRate
	if rand.Float64() < f.AbortRate {
		j.abortAt = 1 + rand.IntN(last)
	}
	if j.stream && rand.Float64() < f.StallMidStream {
		j.gapAt = min(firstNonZero(f.StallAfterChunks, 2), last)
	}
	if j.stream && rand.Float64() < f.StreamErrorRate {
		j.errAt = max(len(j.pieces)/2, 1)
	}
	return j
}

// firstNonZero returns the first non-zero value.
func firstNonZero(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// run decodes the pieces, streaming each one, and answers; aborts, hangs
// and stream faults cut it short. The pace is the pacer's: a fixed rate per
// request, or the load model's batch (Options.Load).
func (s *Server) run(out *output, l *liveReq, j *job) {
	clk := s.startClock()
	p := s.pacer(l, j)
	if !p.admit() {
		s.count(0, 0, false)
		out.finish(0, abortReason("Abort in waiting queue")) // Scheduler.abort_request
		return
	}
	clk.admitted()
	produced, ok := 0, false
	defer func() {
		p.release()
		s.count(j.promptTok, tokens(j.pieces[:produced]), ok)
	}()
	// a wedged request holds its slot, as in a stuck scheduler; one held by
	// StallMatch goes on once the fault is cleared
	if j.hang {
		s.waitAbort(l)
	}
	if j.hang || (j.stalled != nil && !s.holdStalled(l, j.stalled)) {
		out.finish(0, abortReason("Aborted by AbortReq."))
		return
	}
	through := 0
	for i := range j.pieces {
		through += len(j.pieces[i].ids)
		if !p.wait(through) {
			out.finish(produced, abortReason("Aborted by AbortReq."))
			return
		}
		produced = i + 1
		clk.output(produced, tokens(j.pieces[i:produced]))
		if j.stream && (j.chat || produced < len(j.pieces)) { // /generate: the last piece comes with the finish
			out.chunk(produced)
		}
		switch produced {
		case j.gapAt:
			s.waitAbort(l)
			return
		case j.errAt:
			out.fail("Internal server error: the scheduler dropped this request.")
			return
		case j.abortAt:
			out.finish(produced, abortReason("Abort in running batch")) // e.g. update_weights, /abort_request
			return
		}
	}
	ok = true
	clk.finished()
	out.finish(produced, nil)
}

// pacer decides when a request runs and how fast its tokens come.
type pacer interface {
	admit() bool           // leave the waiting queue; false: aborted there
	wait(through int) bool // until the output holds through tokens; false: aborted
	release()
}

func (s *Server) pacer(l *liveReq, j *job) pacer {
	if s.sched != nil {
		return &loadPacer{s: s, l: l, j: j}
	}
	step := time.Duration(0)
	if !s.opts.Instant {
		step = s.scaled(time.Duration(float64(j.n)/s.opts.TokPerSec*float64(time.Second))) / time.Duration(len(j.pieces))
	}
	return &ratePacer{s: s, l: l, kv: j.promptTok + j.n, step: step}
}

// ratePacer: a slot among Capacity, then TokPerSec for each request.
type ratePacer struct {
	s    *Server
	l    *liveReq
	kv   int
	step time.Duration
}

func (p *ratePacer) admit() bool   { return p.s.admit(p.l, p.kv) }
func (p *ratePacer) wait(int) bool { return p.s.sleep(p.l, p.step) }
func (p *ratePacer) release()      { p.s.release(p.kv) }

// loadPacer: the request lives in the scheduler (sched.go) until it ends.
type loadPacer struct {
	s *Server
	l *liveReq
	j *job
	q *sreq
}

func (p *loadPacer) admit() bool {
	p.q = p.s.sched.submit(p.j.promptTok, p.j.maxNew, p.j.n)
	if !p.wait(1) { // the first token comes with the prefill
		p.s.sched.cancel(p.q)
		return false
	}
	return true
}

func (p *loadPacer) wait(through int) bool {
	for !p.s.sched.reached(p.q, through) {
		select {
		case <-p.q.wake:
		case <-p.l.abort:
			return false
		case <-p.s.stop:
			return false
		}
	}
	return true
}

func (p *loadPacer) release() { p.s.sched.cancel(p.q) }

// sleep waits d; false if the request was aborted (or the server closed).
func (s *Server) sleep(l *liveReq, d time.Duration) bool {
	if d <= 0 {
		return !l.aborted()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.abort:
	case <-s.stop:
	}
	return false
}

func stallMatches(f Faults, body []byte) bool {
	return f.StallMatch != "" && bytes.Contains(body, []byte(f.StallMatch))
}

// holdStalled holds a request that StallMatch matched until the faults no
// longer match its body (true: decode it now) or it is aborted (false).
func (s *Server) holdStalled(l *liveReq, body []byte) bool {
	for {
		s.mu.Lock()
		f, changed := s.faults, s.refault
		s.mu.Unlock()
		if !stallMatches(f, body) {
			return true
		}
		select {
		case <-changed:
		case <-l.abort:
			return false
		case <-s.stop:
			return false
		}
	}
}

func (s *Server) waitAbort(l *liveReq) {
	select {
	case <-l.abort:
	case <-s.stop:
	}
}

// pieces splits a completion of n tokens into stream chunks: every
// tokens each for a /generate stream (interval.go), else up to 64; the
// first third is reasoning.
func (s *Server) pieces(n, every int) []piece {
	var ps []piece
	if s.opts.Instant {
		ps = []piece{{reasoning: true, text: "thinking", ids: randIDs(1)}, {text: "ok", ids: randIDs(1)}}
	} else {
		sizes := chunkSizes(n, every)
		ps = make([]piece, len(sizes))
		for i, tok := range sizes {
			ps[i] = piece{reasoning: i < len(sizes)/3, text: words(tok), ids: randIDs(tok)}
		}
	}
	content := 0
	for _, p := range ps {
		if !p.reasoning {
			content += len(p.text)
		}
	}
	if last := &ps[len(ps)-1]; s.opts.ContentBytes > content {
		last.text += strings.Repeat("x", s.opts.ContentBytes-content)
	}
	return ps
}

func randIDs(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = rand.IntN(163840)
	}
	return ids
}

func tokens(ps []piece) int {
	n := 0
	for _, p := range ps {
		n += len(p.ids)
	}
	return n
}
