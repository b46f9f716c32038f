package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// liveReq is one request the server holds, from admission to its answer:
// an entry of SGLang's TokenizerManager.rid_to_state.
type liveReq struct {
	rid   string
	key   string // the map key: the rid (sglang) or a fresh id (vllm)
	abort chan struct{}
	done  chan struct{}
	once  sync.Once
}

func (l *liveReq) kill() { l.once.Do(func() { close(l.abort) }) }

func (l *liveReq) aborted() bool {
	select {
	case <-l.abort:
		return true
	default:
		return false
	}
}

// newRID makes the rid of a request that sent none: GenerateReqInput's
// normalize_batch_and_arguments sets rid = uuid.uuid4().hex (sgl-project/sglang,
// python/sglang/srt/managers/io_struct.py), 32 hex digits, so prefix-free.
func newRID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

// errDuplicate is SGLang's "Duplicate request ID detected" ValueError.
type errDuplicate string

func (e errDuplicate) Error() string { return "Duplicate request ID detected: " + string(e) }

// register books rid as live. The check copies
// TokenizerManager._init_req_state (sgl-project/sglang,
// python/sglang/srt/managers/tokenizer_manager.py):
// "if rid in self.rid_to_state: raise ValueError(...)". vLLM ignores a
// client's rid (OpenAIBaseModel extra="allow") and makes its own request id.
func (s *Server) register(rid string) (*liveReq, error) {
	l := &liveReq{rid: rid, key: rid, abort: make(chan struct{}), done: make(chan struct{})}
	if s.vllm() {
		l.key = newRID()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.live[l.key]; dup {
		return nil, errDuplicate(rid)
	}
	s.live[l.key] = l
	return l, nil
}

func (s *Server) unregister(l *liveReq) {
	s.mu.Lock()
	if s.live[l.key] == l {
		delete(s.live, l.key)
	}
	s.mu.Unlock()
	close(l.done)
}

// watchDisconnect notices a client that went away only after the hold, as
// TokenizerManager._wait_one_response does: it wakes every
// SGLANG_REQUEST_STATE_WAIT_TIMEOUT (4 s), asks request.is_disconnected()
// and then calls abort_request(obj.rid). Until then the rid stays live.
func (s *Server) watchDisconnect(ctx context.Context, l *liveReq) {
	select {
	case <-ctx.Done():
	case <-l.done:
		return
	}
	if hold := s.scaled(s.opts.DisconnectHold); hold > 0 {
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-t.C:
		case <-l.done:
			return // finished before the check: nothing to abort
		}
	}
	s.abortRequest(l)
}

// abortRequest aborts l and, on SGLang, every live request whose rid starts
// with l's rid: Scheduler.abort_request and GrammarManager test
// "req.rid.startswith(recv_req.rid)" (sgl-project/sglang,
// python/sglang/srt/managers/scheduler.py, constrained/grammar_manager.py).
// vLLM aborts only its own request id (AsyncLLM.abort).
func (s *Server) abortRequest(l *liveReq) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live[l.key] != l {
		return // abort_request returns when the rid is no longer in rid_to_state
	}
	if s.vllm() {
		l.kill()
		return
	}
	for rid, o := range s.live {
		if strings.HasPrefix(rid, l.rid) {
			o.kill()
		}
	}
}

// abortAll aborts every live request (abort_all, or the server going down).
func (s *Server) abortAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.live {
		l.kill()
	}
}

// LiveRIDs lists the rids the server holds now (for tests).
func (s *Server) LiveRIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.live {
		out = append(out, l.rid)
	}
	return out
}

// LastInputIDs is the input_ids of the last /generate request that sent
// them (for tests).
func (s *Server) LastInputIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.lastIDs...)
}

// abortReason is FINISH_ABORT.to_json() without a status code, which
// TokenizerManager._handle_abort_finish_reason lets through as HTTP 200.
func abortReason(msg string) map[string]any {
	return map[string]any{"type": "abort", "message": msg, "status_code": nil, "err_type": nil}
}

func (s *Server) vllm() bool { return s.opts.Flavor == "vllm" }
