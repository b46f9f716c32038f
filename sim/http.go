package sim

import (
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
)

func (s *Server) mux() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/health", s.health)
	if !s.opts.NoMetrics {
		// launch_server mounts /metrics only with --enable-metrics
		// (http_server.py, add_prometheus_middleware); without it FastAPI
		// answers 404 {"detail":"Not Found"}, as the mux's 404 does here
		m.HandleFunc("/metrics", s.metrics)
	}
	m.HandleFunc("/v1/models", s.models)
	m.HandleFunc("/v1/chat/completions", s.complete)
	if s.vllm() { // vllm/entrypoints/openai/api_server.py: no SGLang-native routes
		m.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"version": "0.11.2"})
		})
		m.HandleFunc("/tokenize", s.tokenize)
		return m
	}
	m.HandleFunc("/health_generate", s.health)
	m.HandleFunc("/get_server_info", s.serverInfo)
	m.HandleFunc("/server_info", s.serverInfo)
	m.HandleFunc("/get_model_info", s.modelInfo)
	m.HandleFunc("/model_info", s.modelInfo)
	m.HandleFunc("/generate", s.complete)
	m.HandleFunc("/v1/tokenize", s.tokenize)
	return m
}

// auth requires "Authorization: Bearer <APIKey>". SGLang's
// add_api_key_middleware (python/sglang/srt/utils/common.py) lets OPTIONS,
// /health* and /metrics* through and answers 401 {"error": "Unauthorized"};
// vLLM's (vllm/entrypoints/openai/api_server.py, AuthenticationMiddleware)
// guards only /v1 paths, with the same answer.
func (s *Server) auth(h http.Handler) http.Handler {
	if s.opts.APIKey == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		open := strings.HasPrefix(p, "/health") || strings.HasPrefix(p, "/metrics")
		if s.vllm() {
			open = !strings.HasPrefix(p, "/v1")
		}
		if r.Method != http.MethodOptions && !open && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "Unauthorized"})
			return
		}
		h.ServeHTTP(w, r)
	})
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
	s.mu.Lock()
	maxTotal, maxRunning := s.opts.MaxTotal, s.opts.Capacity
	s.mu.Unlock()
	info := map[string]any{
		"model_path": s.opts.Model, "tokenizer_path": s.opts.Model, "tp_size": 8, "dp_size": 1,
		"kv_cache_dtype": s.opts.KVCacheDType, "quantization": nil, "dtype": "auto", "context_length": contextLen,
		"reasoning_parser": "kimi_k2", "version": "0.5.6-sim",
		"max_total_num_tokens": maxTotal, "max_running_requests": maxRunning,
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
		{"id": s.opts.Model, "object": "model", "owned_by": s.opts.Flavor, "max_model_len": contextLen},
	}})
}

// genThroughput is the decode rate of the running batch; s.mu must be held.
func (s *Server) genThroughput() float64 {
	if s.opts.Instant {
		return 0
	}
	if s.sched != nil {
		return s.sched.genThroughput()
	}
	return float64(s.running) * s.opts.TokPerSec * s.opts.Speed
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
