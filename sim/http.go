package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"time"
)

func (s *Server) mux() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/health", s.health)
	m.HandleFunc("/health_generate", s.health)
	m.HandleFunc("/metrics", s.metrics)
	m.HandleFunc("/get_server_info", s.serverInfo)
	m.HandleFunc("/server_info", s.serverInfo)
	m.HandleFunc("/get_model_info", s.modelInfo)
	m.HandleFunc("/model_info", s.modelInfo)
	m.HandleFunc("/v1/models", s.models)
	m.HandleFunc("/generate", s.complete)
	m.HandleFunc("/v1/chat/completions", s.complete)
	return m
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	if !s.isReady() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serverInfo(w http.ResponseWriter, _ *http.Request) {
	info := map[string]any{
		"model_path": s.opts.Model, "tokenizer_path": s.opts.Model, "tp_size": 8, "dp_size": 1,
		"kv_cache_dtype": "auto", "quantization": nil, "dtype": "auto", "context_length": 262144,
		"reasoning_parser": "kimi_k2", "version": "0.5.6-sim",
		"max_total_num_tokens": s.opts.MaxTotal, "max_running_requests": s.opts.Capacity,
	}
	for k, v := range s.opts.ServerInfo {
		info[k] = v
	}
	s.mu.Lock()
	info["internal_states"] = []map[string]any{{"last_gen_throughput": s.genThroughput(), "running_batch_size": s.running, "waiting_queue_size": s.queued}}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) modelInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path": s.opts.Model, "tokenizer_path": s.opts.Model, "is_generation": true,
		"preferred_sampling_params": nil, "weight_version": "default",
	})
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
		{"id": s.opts.Model, "object": "model", "owned_by": "sglang", "max_model_len": 262144},
	}})
}

// genThroughput is the decode rate of the running batch; s.mu must be held.
func (s *Server) genThroughput() float64 {
	if s.opts.Instant {
		return 0
	}
	return float64(s.running) * s.opts.TokPerSec * s.opts.Speed
}

type request struct {
	RID       string          `json:"rid"`
	Messages  json.RawMessage `json:"messages"`
	Text      json.RawMessage `json:"text"`
	InputIDs  json.RawMessage `json:"input_ids"`
	MaxTokens int             `json:"max_tokens"`
	Sampling  struct {
		MaxNewTokens int `json:"max_new_tokens"`
	} `json:"sampling_params"`
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
	if s.injectFault(w, r) {
		return
	}
	maxTokens := req.MaxTokens
	if !chat {
		maxTokens = req.Sampling.MaxNewTokens
	}
	promptTok := max(len(req.Messages)+len(req.Text)+len(req.InputIDs), 4) / 4
	n, finish := 2, "stop"
	if !s.opts.Instant {
		n, finish = s.completionLen(maxTokens)
	}
	if err := s.admit(r.Context(), promptTok+n); err != nil {
		return
	}
	if s.hangs(req.RID) { // a wedged request holds its slot, as in a stuck scheduler
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
		s.release(promptTok+n, 0, 0, false)
		return
	}
	if !s.opts.Instant {
		d := s.scaled(time.Duration(float64(n) / s.opts.TokPerSec * float64(time.Second)))
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			s.release(promptTok+n, 0, 0, false)
			return
		}
	}
	s.release(promptTok+n, promptTok, n, true)
	content := "ok"
	reasoning := "thinking"
	if !s.opts.Instant {
		content, reasoning = words(n*2/3), words(n/3)
	}
	if s.opts.ContentBytes > len(content) {
		content += strings.Repeat("x", s.opts.ContentBytes-len(content))
	}
	if chat {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": req.RID, "object": "chat.completion", "created": time.Now().Unix(), "model": s.opts.Model,
			"choices": []map[string]any{{"index": 0, "finish_reason": finish,
				"message": map[string]any{"role": "assistant", "content": content, "reasoning_content": reasoning}}},
			"usage": map[string]any{"prompt_tokens": promptTok, "completion_tokens": n, "total_tokens": promptTok + n},
		})
		return
	}
	ids := make([]int, min(n, 64))
	for i := range ids {
		ids[i] = rand.IntN(163840)
	}
	fr := map[string]any{"type": finish}
	if finish == "length" {
		fr["length"] = n
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"text": reasoning + content, "output_ids": ids,
		"meta_info": map[string]any{"id": req.RID, "finish_reason": fr, "prompt_tokens": promptTok,
			"completion_tokens": n, "cached_tokens": 0, "e2e_latency": 0.1},
	})
}

// hangs decides whether a request is never answered.
func (s *Server) hangs(rid string) bool {
	s.mu.Lock()
	f := s.faults
	s.mu.Unlock()
	return (f.StallPrefix != "" && strings.HasPrefix(rid, f.StallPrefix)) || rand.Float64() < f.HangRate
}

// injectFault applies resets and errors; it reports whether it answered.
func (s *Server) injectFault(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	f := s.faults
	s.mu.Unlock()
	switch {
	case rand.Float64() < f.ResetRate:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // close with RST: "connection reset by peer"
				}
				c.Close()
				return true
			}
		}
		return false
	case rand.Float64() < f.ErrorRate:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{"message": "Request waiting timeout reached."}})
		return true
	}
	return false
}

func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	running, queued, used, c := s.running, s.queued, s.used, s.counts
	gen := s.genThroughput()
	s.mu.Unlock()
	lbl := fmt.Sprintf(`{model_name=%q}`, s.opts.Model)
	var b strings.Builder
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP sglang:%s %s\n# TYPE sglang:%s gauge\nsglang:%s%s %g\n", name, help, name, name, lbl, v)
	}
	counter := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP sglang:%s_total %s\n# TYPE sglang:%s_total counter\nsglang:%s_total%s %g\n", name, help, name, name, lbl, v)
	}
	gauge("num_running_reqs", "The number of running requests.", float64(running))
	gauge("num_used_tokens", "The number of used tokens.", float64(used))
	gauge("token_usage", "The token usage.", float64(used)/float64(s.opts.MaxTotal))
	gauge("gen_throughput", "The generation throughput (token/s).", gen)
	gauge("num_queue_reqs", "The number of requests in the waiting queue.", float64(queued))
	gauge("cache_hit_rate", "The prefix cache hit rate.", 0)
	gauge("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", float64(s.opts.MaxTotal))
	counter("prompt_tokens", "Number of prefill tokens processed.", c.prompt)
	counter("generation_tokens", "Number of generation tokens processed.", c.gen)
	counter("num_requests", "Number of requests processed.", c.requests)
	counter("num_aborted_requests", "Number of requests aborted.", c.aborted)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = io.WriteString(w, b.String())
}
