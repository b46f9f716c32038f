package parse

import (
	"encoding/json"
	"fmt"
	"time"
)

// Worker states as written to worker.json.
const (
	WorkerStarting      = "starting"
	WorkerWaitingServer = "waiting_server"
	WorkerRunning       = "running"
	WorkerStopping      = "stopping"
	WorkerDone          = "done"
	WorkerFailed        = "failed"
	WorkerStopped       = "stopped" // ended by a stop signal; the next start resumes
)

// Category states as written to worker.json.
const (
	CatPending = "pending"
	CatRunning = "running"
	CatDone    = "done"
	CatSkipped = "skipped"
	CatStopped = "stopped"
	CatFailed  = "failed"
)

// WorkerState is <root>/run/worker.json, replaced atomically by the worker
// at least every 2 s and read by the dashboard.
type WorkerState struct {
	Schema    int       `json:"schema"`
	PID       int       `json:"pid"`
	Args      []string  `json:"args"`
	Version   string    `json:"version"`
	Server    string    `json:"server"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
	State     string    `json:"state"`
	Category  string    `json:"category,omitempty"`
	// CategorySince is when the worker moved to Category: a file that last
	// grew before it is not a stall yet
	CategorySince time.Time `json:"category_since,omitzero"`
	Error         string    `json:"error,omitempty"`
	// WholeAnswers says why the worker asks the server for whole /generate
	// answers instead of streams (it streamed one cumulative chunk per
	// token: a gateway dropped stream_interval); empty while it streams.
	WholeAnswers string          `json:"whole_answers,omitempty"`
	Categories   []CategoryState `json:"categories"`
}

// CategoryState is one category's line in worker.json.
type CategoryState struct {
	Name             string   `json:"name"`
	Class            string   `json:"class"`
	Done             int      `json:"done"`
	Target           int      `json:"target"`
	Errors           int      `json:"errors"`
	CompletionTokens int64    `json:"completion_tokens"`
	TokenBudget      int64    `json:"token_budget,omitempty"`
	Rate             float64  `json:"rate"` // completions per minute
	ETASeconds       *float64 `json:"eta_s"`
	State            string   `json:"state"`

	// Measured at the category's resume scan (absent before it): Lines is
	// the physical lines of raw_responses.jsonl, ExtraLines those that are
	// not a unique record for a prompt (duplicate ids, blank and bad lines,
	// ids no prompt has). The worker appends only unique records after the
	// scan, so unique records = lines now − ExtraLines.
	Lines      *int64 `json:"lines,omitempty"`
	ExtraLines *int64 `json:"extra_lines,omitempty"`
	// FailedPrompts is how many prompts' latest attempt failed (errors.jsonl
	// ids with no record since), where Errors counts failed attempts.
	FailedPrompts *int `json:"failed_prompts,omitempty"`
	// Window is how many requests the worker keeps in flight, and
	// WindowReason why it last changed ("↑ queue empty; KV 71 %", "fixed").
	Window       int    `json:"window,omitempty"`
	WindowReason string `json:"window_reason,omitempty"`
	// Yielded is how many requests a shared gateway preempted for other
	// traffic (503 with X-SMG-Preempted): sent again, not failures.
	Yielded int `json:"yielded,omitempty"`
}

// ParseWorkerState reads worker.json.
func ParseWorkerState(data []byte) (WorkerState, error) {
	var s WorkerState
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf(WorkerStateFile+": %w", err)
	}
	return s, nil
}

// CategoryNamed is what worker.json says of the category name (nil: nothing,
// or no worker.json).
func (st *WorkerState) CategoryNamed(name string) *CategoryState {
	if st == nil {
		return nil
	}
	for i := range st.Categories {
		if st.Categories[i].Name == name {
			return &st.Categories[i]
		}
	}
	return nil
}

// FailedCategories are the categories worker.json says failed, in its
// order (the worker's state and the report's say which).
func (st WorkerState) FailedCategories() []string {
	var out []string
	for _, c := range st.Categories {
		if c.State == CatFailed {
			out = append(out, c.Name)
		}
	}
	return out
}
