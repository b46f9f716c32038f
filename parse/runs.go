package parse

import (
	"encoding/json"
	"fmt"
)

// RunLine is one line of a category's runs.jsonl (RunsFile): the worker
// appends one each time a run starts on the category, and the dashboard
// reads the server configurations from them. When a run ends on its own
// terms it appends an end line (End set, StartedAt empty) to the runs.jsonl
// of the category it worked on last; a run killed by SIGKILL writes none.
type RunLine struct {
	Run       string         `json:"run"`
	PID       int            `json:"pid"`
	StartedAt string         `json:"started_at,omitempty"`
	Version   string         `json:"version,omitempty"`
	Server    string         `json:"server,omitempty"`
	API       string         `json:"api,omitempty"`
	Model     string         `json:"model,omitempty"`
	Snapshot  ServerSnapshot `json:"server_info,omitzero"`
	EndedAt   string         `json:"ended_at,omitempty"`
	End       string         `json:"end,omitempty"`   // RunFinished, RunStopped or RunFailed
	Cause     string         `json:"cause,omitempty"` // the signal that stopped it, or the error it failed with
	// Tally is the run's wasted-token ledger and energy on the category
	// (tally.go): a tally line has it and no StartedAt or End
	Tally *RunTally `json:"tally,omitempty"`
}

// How a run ended, as its end line says.
const (
	RunFinished = "finished" // every category done
	RunStopped  = "stopped"  // a stop signal (SIGTERM, SIGINT): the next start resumes
	RunFailed   = "failed"   // an error ended it
)

// ServerSnapshot is what the server says about itself, kept in runs.jsonl.
type ServerSnapshot struct {
	Info      map[string]any `json:"info,omitempty"`
	ConfigKey string         `json:"config_key"`
	Error     string         `json:"error,omitempty"`
}

// ConfigUnknown is the config key of a snapshot that could not be taken
// whole. It never counts as a configuration of its own.
const ConfigUnknown = "unknown"

// Known says the snapshot names a configuration: it has a key, and it is
// neither ConfigUnknown nor (as older workers wrote) the hash of an empty
// info.
func (s ServerSnapshot) Known() bool {
	return s.ConfigKey != "" && s.ConfigKey != ConfigUnknown && len(s.Info) > 0
}

// IsEnd says the line is a run's end line, not its start on a category.
func (r RunLine) IsEnd() bool { return r.End != "" }

// IsTally says the line is a run's tally on the category, not its start.
func (r RunLine) IsTally() bool { return r.Tally != nil && r.End == "" }

// ParseRunLine reads one line of runs.jsonl.
func ParseRunLine(b []byte) (RunLine, error) {
	var r RunLine
	if err := json.Unmarshal(b, &r); err != nil {
		return RunLine{}, fmt.Errorf(RunsFile+": %w", err)
	}
	return r, nil
}
