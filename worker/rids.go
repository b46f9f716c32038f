package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/synthwatch/synthwatch/parse"
)

// ridSource makes request ids. SGLang aborts by rid prefix
// (req.rid.startswith(recv_req.rid) in Scheduler.abort_request), so rids
// must be prefix-free: all have the same width. Each attempt gets a new one,
// because SGLang keeps a disconnected request for about 4 s and answers a
// reused rid with 400 "Duplicate request ID detected".
type ridSource struct {
	run string
	seq atomic.Uint64
}

const ridHexLen = 32

func (r *ridSource) next(cat string, id []byte) string {
	n := r.seq.Add(1)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d", r.run, cat, id, n)
	return "sw-" + hex.EncodeToString(h.Sum(nil))[:ridHexLen]
}

// systemicGuard stops the run when the server refuses request after
// request for a reason of its set-up (401, 403, 404, 405, 422) rather than
// of one prompt; such refusals write no per-prompt error lines.
type systemicGuard struct {
	mu  sync.Mutex
	ids map[string]bool // distinct prompts refused since the last answer
}

// SystemicLimit is how many requests in a row must be refused that way.
const SystemicLimit = 3

// fail counts one refusal and reports whether the run must stop: one
// prompt refused again and again is that prompt's problem, not the server's.
func (g *systemicGuard) fail(id []byte) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ids == nil {
		g.ids = map[string]bool{}
	}
	g.ids[string(id)] = true
	return len(g.ids) >= SystemicLimit
}

func (g *systemicGuard) ok() {
	g.mu.Lock()
	clear(g.ids)
	g.mu.Unlock()
}

// ErrSystemic wraps the refusal that stopped a run.
var ErrSystemic = errors.New("the server refuses every request")

// systemicError is the one clear message for the run's end.
func systemicError(err error, keySent bool) error {
	var h *HTTPError
	if errors.As(err, &h) {
		hint := authHint(h.Status, keySent)
		if h.Status == http.StatusNotFound || h.Status == http.StatusMethodNotAllowed {
			hint = " (check --server and --api)"
		}
		return fmt.Errorf("%w: %d %s from %s %s on %d requests in a row%s: %s",
			ErrSystemic, h.Status, http.StatusText(h.Status), h.Method, parse.Redact(h.URL), SystemicLimit, hint, h.Body)
	}
	return fmt.Errorf("%w: %v", ErrSystemic, err)
}

// authHint says what a 401 or 403 asks for ("" for another status).
func authHint(status int, keySent bool) string {
	switch {
	case status != http.StatusUnauthorized && status != http.StatusForbidden:
		return ""
	case keySent:
		return " (the server refused the API key that was sent)"
	}
	return " (the server wants an API key: --api-key-file PATH or SYNTHWATCH_API_KEY)"
}

// ErrAuth is a server that refuses /health for want of the right key:
// waiting for it to come up would wait for ever.
var ErrAuth = errors.New("the server refuses the worker")

// authRefusal is ErrAuth for a 401 or 403 from /health, else nil.
func authRefusal(err error, keySent bool) error {
	var h *HTTPError
	if !errors.As(err, &h) || authHint(h.Status, keySent) == "" {
		return nil
	}
	return fmt.Errorf("%w: %d %s from %s %s%s", ErrAuth, h.Status, http.StatusText(h.Status), h.Method, parse.Redact(h.URL), authHint(h.Status, keySent))
}
