package worker

import (
	"bytes"
	"encoding/json"
	"time"
)

// record is one line of raw_responses.jsonl. The field order matters: id
// first and completion_tokens before the long text, so that a resume scan
// reads only each line's head (parse.ParseRecordHead).
type record struct {
	ID               json.RawMessage `json:"id"`
	Category         string          `json:"category"`
	Run              string          `json:"run"`
	PromptTokens     int             `json:"prompt_tokens"`
	CompletionTokens int             `json:"completion_tokens"`
	FinishReason     string          `json:"finish_reason"`
	LatencyS         float64         `json:"latency_s"`
	FinishedAt       string          `json:"finished_at"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Text             *string         `json:"text,omitempty"`
	OutputIDs        json.RawMessage `json:"output_ids,omitempty"`
	PromptIDs        json.RawMessage `json:"prompt_ids,omitempty"` // the server's templated prompt (/generate with messages)
}

// errorRecord is one line of errors.jsonl.
type errorRecord struct {
	ID       json.RawMessage `json:"id"`
	Category string          `json:"category"`
	Run      string          `json:"run"`
	Reason   string          `json:"reason"`
	Status   int             `json:"status,omitempty"`
	Attempts int             `json:"attempts"`
	At       string          `json:"at"`
}

// encodeLine renders v as one JSON line ending in '\n', without HTML escaping.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
