package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A shared gateway (the Shepherd Model Gateway, smg) admits requests by
// class: the X-SMG-Priority header, system > interactive > default > bulk,
// unknown values read as default (lightseekorg/smg
// model_gateway/src/middleware/scheduler/class.rs @ 90ecc5cc). Bulk is
// "preemptible by everyone else": a request cancelled before its first
// token to admit a higher class comes back as 503 with Retry-After: 1 and
// X-SMG-Preempted: true (…/scheduler/error.rs @ d6aa28b4). A synthetic-data
// run is bulk work: behind a gateway it says so, and a preemption is a
// yield, sent again after Retry-After without spending an attempt.

// PriorityHeader is the gateway's class header.
const PriorityHeader = "X-SMG-Priority"

// PreemptedHeader marks a 503 that is a preemption, not an overload.
const PreemptedHeader = "X-SMG-Preempted"

// priorities are the classes smg knows.
var priorities = []string{"system", "interactive", "default", "bulk"}

// CheckPriority validates --priority: "", auto, none, or a class.
func CheckPriority(p string) error {
	switch p = strings.ToLower(strings.TrimSpace(p)); p {
	case "", "auto", "none":
		return nil
	}
	for _, c := range priorities {
		if p == c {
			return nil
		}
	}
	return fmt.Errorf("--priority %q: want auto, none, or one of %s", p, strings.Join(priorities, ", "))
}

// ErrPreempted is an attempt the gateway preempted for other traffic.
type ErrPreempted struct{ RetryAfter time.Duration }

func (e *ErrPreempted) Error() string { return "preempted by the gateway for other traffic (yielded)" }

// preempted reads a 503 carrying X-SMG-Preempted as a yield.
func preempted(resp *http.Response) error {
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(PreemptedHeader) == "" {
		return nil
	}
	d := time.Second // smg sends Retry-After: 1
	if n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && n >= 0 && n <= 60 {
		d = time.Duration(n) * time.Second
	}
	return &ErrPreempted{RetryAfter: d}
}

// isPreempted reports a yield and how long the gateway asked to wait.
func isPreempted(err error) (time.Duration, bool) {
	var p *ErrPreempted
	if errors.As(err, &p) {
		return p.RetryAfter, true
	}
	return 0, false
}

// choosePriority settles the header for the run: the configured class, or
// with auto, bulk when the server answers GET /workers with a list of
// workers as a gateway does (smg, sgl-router), nothing for a server.
func (w *Worker) choosePriority(ctx context.Context) {
	p := strings.ToLower(strings.TrimSpace(w.cfg.Priority))
	switch p {
	case "none":
		return
	case "", "auto":
		if !w.isGateway(ctx) {
			return
		}
		w.logf("The server is a gateway (GET /workers lists its workers): requests go as %s: bulk, preemptible by other traffic (--priority to change)", PriorityHeader)
		p = "bulk"
	default:
		w.logf("Requests go as %s: %s", PriorityHeader, p)
	}
	w.client.Priority = p
}

func (w *Worker) isGateway(ctx context.Context) bool {
	m, err := w.client.GetJSON(ctx, "/workers")
	if err != nil {
		return false
	}
	_, ok := m["workers"].([]any)
	return ok
}

// yield counts a preempted attempt and waits the gateway's Retry-After
// (with jitter, so the yielded do not all come back at once); the first of
// the run is logged.
func (w *Worker) yield(ctx context.Context, c Category, err error) error {
	d, _ := isPreempted(err)
	if w.yields.Add(1) == 1 {
		w.logf("%s: the gateway preempted a request for other traffic (%s with %s): it yields and is sent again after %s, not counted as a failure; worker.json counts the yields", c.Name, "503", PreemptedHeader, d)
	}
	return sleepCtx(ctx, d+rand.N(d/2+1))
}
