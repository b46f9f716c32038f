package parse

import (
	"encoding/json"
	"fmt"
)

// RunLine is one line of a category's runs.jsonl (RunsFile): the worker
// appends one each time a run starts on the category, and the dashboard
// reads the server configurations from them.
type RunLine struct {
	Run       string         `json:"run"`
	PID       int            `json:"pid"`
	StartedAt string         `json:"started_at"`
	Version   string         `json:"version"`
	Server    string         `json:"server"`
	API       string         `json:"api"`
	Model     string         `json:"model,omitempty"`
	Snapshot  ServerSnapshot `json:"server_info"`
}

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

// ParseRunLine reads one line of runs.jsonl.
func ParseRunLine(b []byte) (RunLine, error) {
	var r RunLine
	if err := json.Unmarshal(b, &r); err != nil {
		return RunLine{}, fmt.Errorf(RunsFile+": %w", err)
	}
	return r, nil
}
