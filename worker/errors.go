package worker

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"

	"github.com/synthwatch/synthwatch/parse"
)

// HTTPError is a non-2xx answer.
type HTTPError struct {
	Status int
	Method string
	URL    string
	Body   string
}

func (e *HTTPError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("server answered %d %s to %s %s", e.Status, http.StatusText(e.Status), e.Method, parse.Redact(e.URL))
	}
	return fmt.Sprintf("server answered %d: %s", e.Status, e.Body)
}

// PermanentError marks a failure that retrying cannot fix (a prompt the
// server cannot take). It goes to errors.jsonl.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// ErrAborted is a 200 answer whose finish_reason is "abort": SGLang ends a
// request that way for /abort_request, a weight update or a prefix fan-out.
// The answer is partial, so it is retried and never kept.
var ErrAborted = errors.New("server aborted the request")

// errClass says what the worker does with a failed attempt.
type errClass int

const (
	retryable  errClass = iota // back off and send again
	permanent                  // this prompt cannot succeed: errors.jsonl
	systemic                   // the server refuses every request: stop the run if it repeats
	serverDown                 // nothing listens: wait at the gate
	yielded                    // a gateway preempted it for other traffic: send again, no attempt spent
)

// classify sorts a failed attempt. SGLang's "Duplicate request ID" 400 is
// transient: a disconnected attempt stays live for about 4 s. 401, 403,
// 404, 405 and 422 come from the server's set-up (--api-key, a wrong URL or
// API), not from one prompt.
func classify(err error) errClass {
	var p *PermanentError
	if errors.As(err, &p) {
		return permanent
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return serverDown
	}
	if _, ok := isPreempted(err); ok {
		return yielded
	}
	var h *HTTPError
	if !errors.As(err, &h) {
		return retryable
	}
	switch {
	case h.Status == 400 && strings.Contains(h.Body, "Duplicate request ID"):
		return retryable
	case h.Status == 401, h.Status == 403, h.Status == 404, h.Status == 405, h.Status == 422:
		return systemic
	case h.Status == 408, h.Status == 429:
		return retryable
	case h.Status >= 400 && h.Status < 500:
		return permanent
	}
	return retryable
}

// IsPermanent tells errors that go to errors.jsonl from ones to retry.
func IsPermanent(err error) bool { return classify(err) == permanent }

// IsServerDown is true when nothing listens: waiting for /health beats
// burning through retries.
func IsServerDown(err error) bool { return classify(err) == serverDown }
