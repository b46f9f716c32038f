package parse

import (
	"bytes"
	"encoding/json"
)

// RecordFacts is what the dashboard tallies per record: its completion
// tokens (as RecordHead reads them) and the run that wrote it.
type RecordFacts struct {
	CompletionTokens int64
	HasTokens        bool
	// Run is the record's top-level "run" string; "" for a record written
	// before runs were recorded (the old script), or a non-string run.
	Run string
}

// ParseRecordFacts reads one JSONL line (without its '\n'; a '\r', a BOM
// and surrounding blanks are accepted). A line that is not a record (see
// ParseRecordHead) is an error.
func ParseRecordFacts(line []byte) (RecordFacts, error) {
	h, err := ParseRecordHead(line)
	if err != nil {
		return RecordFacts{}, err
	}
	f := RecordFacts{CompletionTokens: h.CompletionTokens, HasTokens: h.HasTokens}
	f.Run = recordRun(line)
	return f, nil
}

var runKey = []byte(`"run"`)

// recordRun finds the top-level "run". The worker writes it near the
// start of the line; a full member scan is the fallback for other shapes.
func recordRun(line []byte) string {
	if !bytes.Contains(line, runKey) {
		return ""
	}
	m, err := Members(bytes.TrimSpace(line))
	if err != nil {
		return ""
	}
	var s string
	if raw, ok := m["run"]; !ok || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
