package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// endlessBytes is Faults.EndlessBytes.
func (s *Server) endlessBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.EndlessBytes
}

// endless streams deltas of n bytes every millisecond until the client goes
// away, never a finish_reason: what no real server does, since SGLang ends
// every request at max_new_tokens (Req.check_finished,
// python/sglang/srt/managers/schedule_batch.py). A chat stream sends
// content deltas; a /generate stream sends text and output_ids deltas (as
// --incremental-streaming-output).
func endless(w http.ResponseWriter, r *http.Request, chat bool, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	var lines [2][]byte // x then y: no delta extends the one before, so none reads as cumulative
	for i, c := range []string{"x", "y"} {
		text := strings.Repeat(c, n)
		var ev any = map[string]any{"choices": []map[string]any{{"index": 0, "delta": map[string]any{"content": text}}}}
		if !chat {
			ev = map[string]any{"text": text, "output_ids": []int{i}, "meta_info": map[string]any{"finish_reason": nil}}
		}
		b, _ := json.Marshal(ev)
		lines[i] = append(append([]byte("data: "), b...), "\n\n"...)
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	f, _ := w.(http.Flusher)
	for i := 0; ; i++ {
		if _, err := w.Write(lines[i%2]); err != nil {
			return
		}
		if f != nil {
			f.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}
