package worker

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

func (w *Worker) initState() {
	now := time.Now()
	w.state = parse.WorkerState{
		Schema: 1, PID: os.Getpid(), Args: redactAll(w.cfg.Args), Version: w.cfg.Version, Server: parse.Redact(w.cfg.Server),
		StartedAt: now, UpdatedAt: now, State: parse.WorkerStarting,
	}
	for _, c := range w.cats {
		w.state.Categories = append(w.state.Categories, parse.CategoryState{
			Name: c.Name, Class: c.Class, State: parse.CatPending, TokenBudget: c.TokenBudget,
		})
	}
	w.writeState()
}

// redactAll is args with each URL's password hidden: worker.json is read by
// anyone who can read the root (a --server with a password in it).
func redactAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = parse.Redact(a)
	}
	return out
}

// stateLoop rewrites worker.json every second, so it is never older than 2 s
// while the worker lives.
func (w *Worker) stateLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := w.lock.Held(); err != nil {
				w.stopRun(err) // a second worker could take the new run/: stop writing
				continue
			}
			w.writeState()
		}
	}
}

// writeState writes worker.json, never into a run/ this worker no longer
// holds.
func (w *Worker) writeState() {
	if w.lock != nil && w.lock.Held() != nil {
		return
	}
	w.mu.Lock()
	w.state.UpdatedAt = time.Now()
	data, err := json.MarshalIndent(w.state, "", "  ")
	w.mu.Unlock()
	if err != nil {
		return
	}
	if err := writeFileAtomic(w.statePath, append(data, '\n')); err != nil {
		w.logf("WARNING: cannot write %s: %v", w.statePath, err)
	}
}

func (w *Worker) setWorkerState(state, errText string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// a stop request is not undone by the server coming back
	if w.state.State == parse.WorkerStopping && (state == parse.WorkerRunning || state == parse.WorkerWaitingServer) {
		return
	}
	w.state.State = state
	if errText != "" {
		w.state.Error = errText
	}
}

func (w *Worker) setCurrent(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state.Category != name {
		w.state.CategorySince = time.Now()
	}
	w.state.Category = name
}

func (w *Worker) updateCat(idx int, f func(*parse.CategoryState)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.state.Categories[idx])
}

// failedCats are the categories this run could not do, in order.
func (w *Worker) failedCats() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range w.state.Categories {
		if c.State == parse.CatFailed {
			out = append(out, c.Name)
		}
	}
	return out
}

// wholeAnswers logs, once, that the server now gets asked for whole
// answers, and says so in worker.json.
func (w *Worker) wholeAnswers(why string) {
	w.logf("WARNING: %s", why)
	w.mu.Lock()
	w.state.WholeAnswers = why
	w.mu.Unlock()
}
