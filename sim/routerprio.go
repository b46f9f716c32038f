package sim

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Priority admission as the Shepherd Model Gateway (smg) does it
// (lightseekorg/smg, model_gateway/src/middleware/scheduler/):
//   - class.rs @ 90ecc5cc: the X-SMG-Priority header, case-insensitive and
//     trimmed, names the class: bulk < default < interactive < system;
//     anything else is default;
//   - engine.rs @ 043777bd: a request takes a slot of the pool at once if
//     one is free, else waits in its class's FIFO queue; a freed slot goes
//     to the highest class waiting;
//   - error.rs @ d6aa28b4: a request cancelled in flight, before its first
//     token, to admit a higher-priority waiter is answered 503 with
//     Retry-After: 1 and X-SMG-Preempted: true, code scheduler_preempted.
//
// Reservations, per-class queue limits, timeouts and the starvation
// override are left out: the worker meets only the preemption.

const priorityHeader = "X-SMG-Priority"

// classes in ascending priority, as class.rs's Class.
const (
	classBulk = iota
	classDefault
	classInteractive
	classSystem
)

var classNames = []string{"bulk", "default", "interactive", "system"}

func parseClass(v string) int {
	if i := slices.Index(classNames, strings.ToLower(strings.TrimSpace(v))); i >= 0 {
		return i
	}
	return classDefault
}

// admission is the gateway's slot pool and its waiters.
type admission struct {
	mu        sync.Mutex
	slots     int
	inflight  []*flight // in admission order
	waiting   []*flight
	preempted [4]int // by class
	admitted  [4]int // by class
}

// flight is one request holding (or waiting for) a slot.
type flight struct {
	class      int
	started    bool          // its first byte went out: no longer preemptible
	preempt    chan struct{} // closed when a higher class takes its slot
	granted    chan struct{} // closed when a waiter gets its slot
	wasPreempt bool
}

// EnablePriority makes the router admit requests by X-SMG-Priority into
// slots (the backend's capacity as the gateway sees it), preempting bulk
// (then default) requests that have not started for higher classes.
func (r *Router) EnablePriority(slots int) { r.prio = &admission{slots: max(slots, 1)} }

// Preempted is how many requests of class ("bulk", …) were preempted.
func (r *Router) Preempted(class string) int {
	if r.prio == nil {
		return 0
	}
	r.prio.mu.Lock()
	defer r.prio.mu.Unlock()
	return r.prio.preempted[parseClass(class)]
}

// Admitted is how many requests of class took a slot.
func (r *Router) Admitted(class string) int {
	if r.prio == nil {
		return 0
	}
	r.prio.mu.Lock()
	defer r.prio.mu.Unlock()
	return r.prio.admitted[parseClass(class)]
}

func (a *admission) admit(ctx context.Context, class int) (*flight, error) {
	f := &flight{class: class, preempt: make(chan struct{}), granted: make(chan struct{})}
	a.mu.Lock()
	switch {
	case len(a.inflight) < a.slots:
		a.take(f)
		a.mu.Unlock()
		return f, nil
	case a.preemptFor(class):
		a.take(f)
		a.mu.Unlock()
		return f, nil
	}
	a.waiting = append(a.waiting, f)
	a.mu.Unlock()
	select {
	case <-f.granted:
		return f, nil
	case <-ctx.Done():
		a.mu.Lock()
		defer a.mu.Unlock()
		select {
		case <-f.granted: // granted meanwhile: give the slot on
			a.drop(f)
		default:
			a.waiting = slices.DeleteFunc(a.waiting, func(w *flight) bool { return w == f })
		}
		return nil, ctx.Err()
	}
}

// preemptFor cancels the newest not-started request of the lowest class
// below class; a.mu held.
func (a *admission) preemptFor(class int) bool {
	victim := -1
	for i, f := range a.inflight {
		if !f.started && f.class < class && (victim < 0 || f.class <= a.inflight[victim].class) {
			victim = i
		}
	}
	if victim < 0 {
		return false
	}
	v := a.inflight[victim]
	v.wasPreempt = true
	a.preempted[v.class]++
	close(v.preempt)
	a.inflight = slices.Delete(a.inflight, victim, victim+1)
	return true
}

func (a *admission) take(f *flight) {
	a.inflight = append(a.inflight, f)
	a.admitted[f.class]++
}

// release gives f's slot to the highest class waiting, first come first.
func (a *admission) release(f *flight) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.drop(f)
}

func (a *admission) drop(f *flight) {
	n := len(a.inflight)
	a.inflight = slices.DeleteFunc(a.inflight, func(g *flight) bool { return g == f })
	if len(a.inflight) == n || len(a.waiting) == 0 {
		return // it was preempted: its slot already went on
	}
	best := 0
	for i, w := range a.waiting {
		if w.class > a.waiting[best].class {
			best = i
		}
	}
	w := a.waiting[best]
	a.waiting = slices.Delete(a.waiting, best, best+1)
	a.take(w)
	close(w.granted)
}

// started marks f's first byte as sent; false if it was preempted first.
// Without priority admission (f nil) every request starts.
func (a *admission) started(f *flight) bool {
	if a == nil || f == nil {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if f.wasPreempt {
		return false
	}
	f.started = true
	return true
}

// writePreempted is error.rs's SchedulerError::Preempted response.
func writePreempted(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("X-SMG-Preempted", "true")
	w.Header().Set("X-SMG-Error-Code", "scheduler_preempted")
	writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{
		"message": "request preempted by higher-priority traffic", "type": "Service Unavailable", "code": "scheduler_preempted"}})
}
