package sim

import (
	"fmt"
	"io"
	"time"
)

// logf writes one SGLang-style line: "[date time{tags}] msg".
func (s *Server) logf(tags, format string, args ...any) {
	ts := time.Now().Format("2006-01-02 15:04:05")
	if s.opts.Format == "v0.1" {
		ts = time.Now().Format("15:04:05")
	}
	s.raw(fmt.Sprintf("[%s%s] %s\n", ts, tags, fmt.Sprintf(format, args...)))
}

// raw writes text as is (tracebacks and tqdm lines have no prefix).
func (s *Server) raw(text string) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_, _ = io.WriteString(s.opts.Log, text)
}

func (s *Server) startupLines() {
	o := s.opts
	s.logf("", "server_args=ServerArgs(model_path='%s', tp_size=8, max_running_requests=%d, enable_metrics=%s)", o.Model, o.Capacity, pyBool(!o.NoMetrics))
	s.logf(" TP0", "Load weight begin. avail mem=77.12 GB")
	s.raw("Loading safetensors checkpoint shards: 100% Completed | 64/64 [00:38<00:00, 1.66it/s]\n")
	s.logf(" TP0", "Load weight end. elapsed=38.12 s, type=DeepseekV3ForCausalLM, avail mem=12.50 GB, mem usage=64.62 GB.")
	if o.ResolvedKVDType != "" { // ModelRunner.configure_kv_cache_dtype: log_info_on_rank0(logger, f"Using KV cache dtype: {self.kv_cache_dtype}")
		s.logf(" TP0", "Using KV cache dtype: %s", o.ResolvedKVDType)
	}
	s.logf(" TP0", "KV Cache is allocated. #tokens: %d, KV size: 68.62 GB", o.MaxTotal)
	s.logf(" TP0", "Memory pool end. avail mem=5.10 GB")
	s.logf(" TP0", "Capture cuda graph begin. This can take up to several minutes. avail mem=5.00 GB")
	s.logf(" TP0", "Capture cuda graph end. Time elapsed: 48.11 s. mem usage=1.20 GB. avail mem=3.80 GB.")
	s.logf(" TP0", "max_total_num_tokens=%d, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=%d, context_len=262144, available_gpu_mem=3.80 GB", o.MaxTotal, o.Capacity)
	s.logf("", "INFO:     Uvicorn running on http://%s (Press CTRL+C to quit)", s.addr)
}

// logLoop writes Prefill and Decode batch lines with the real running,
// queue, usage and throughput figures, like SGLang's scheduler.
func (s *Server) logLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.scaled(s.opts.LogInterval))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		up := s.srv != nil && s.ready
		running, queued, used, admitted, newTok := s.running, s.queued, s.used, s.admitted, s.newTok
		gen := s.genThroughput()
		s.admitted, s.newTok = 0, 0
		s.mu.Unlock()
		if !up || s.opts.Instant || s.sched != nil { // the load model writes its own lines (sched.go)
			continue
		}
		usage := float64(used) / float64(s.opts.MaxTotal)
		if admitted > 0 {
			s.prefillLine(admitted, newTok, usage, running, queued, float64(newTok)/s.scaled(s.opts.LogInterval).Seconds())
		}
		if running > 0 {
			s.decodeLines(running, used, usage, gen, queued)
		}
	}
}

func (s *Server) prefillLine(seqs, tokens int, usage float64, running, queued int, inThroughput float64) {
	switch s.opts.Format {
	case "v0.3":
		s.logf(" TP0", "Prefill batch. #new-seq: %d, #new-token: %d, #cached-token: 0, cache hit rate: 0.00%%, token usage: %.2f, #running-req: %d, #queue-req: %d", seqs, tokens, usage, running, queued)
	case "v0.4":
		s.logf(" TP0", "Prefill batch. #new-seq: %d, #new-token: %d, #cached-token: 0, token usage: %.2f, #running-req: %d, #queue-req: %d", seqs, tokens, usage, running, queued)
	case "v0.5":
		s.logf(" TP0", "Prefill batch, #new-seq: %d, #new-token: %d, #cached-token: 0, token usage: %.2f, #running-req: %d, #queue-req: %d, ", seqs, tokens, usage, running, queued)
	default:
		s.logf(" TP0", "Prefill batch, #new-seq: %d, #new-token: %d, #cached-token: 0, token usage: %.2f, #running-req: %d, #queue-req: %d, #pending-token: 0, cuda graph: False, input throughput (token/s): %.2f", seqs, tokens, usage, running, queued, inThroughput)
	}
}

func (s *Server) decodeLines(running, used int, usage, gen float64, queued int) {
	switch s.opts.Format {
	case "v0.3":
		s.logf(" TP0", "Decode batch. #running-req: %d, #token: %d, token usage: %.2f, gen throughput (token/s): %.2f, #queue-req: %d", running, used, usage, gen, queued)
	case "v0.4":
		s.logf(" TP0", "Decode batch. #running-req: %d, #token: %d, token usage: %.2f, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: %d", running, used, usage, gen, queued)
	case "v0.5":
		s.logf(" TP0", "Decode batch, #running-req: %d, #token: %d, token usage: %.2f, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: %d, ", running, used, usage, gen, queued)
	case "dp": // DP attention: every rank logs its share
		n := s.opts.DP
		for r := 0; r < n; r++ {
			share := func(v int) int { return v/n + btoi(r < v%n) }
			s.logf(fmt.Sprintf(" DP%d TP%d", r, r), "Decode batch, #running-req: %d, #token: %d, token usage: %.2f, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: %d", share(running), share(used), usage, gen/float64(n), share(queued))
		}
	default:
		s.logf(" TP0", "Decode batch, #running-req: %d, #cached-token: 0, #token: %d, token usage: %.2f, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: %d", running, used, usage, gen, queued)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pyBool is a bool as Python prints it.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
