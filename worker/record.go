package worker

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// record is one line of raw_responses.jsonl. The field order matters: id
// first and completion_tokens before the long text, and the line is sealed
// (parse.SealRecord), so that a resume scan reads each record without
// decoding it (parse.ParseRecordHead).
type record struct {
	ID       json.RawMessage `json:"id"`
	Category string          `json:"category"`
	Run      string          `json:"run"`
	// PromptTokens and CompletionTokens are the server's counts: an int, or
	// nil (null) when the server sent none (a chat stream that ended without
	// its usage chunk, or a server that ignores stream_options.include_usage).
	// null is unknown, never 0: parse.RecordHead reads it as HasTokens false.
	PromptTokens     any             `json:"prompt_tokens"`
	CompletionTokens any             `json:"completion_tokens"`
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

// encodeLine renders v as one JSON line ending in '\n', without HTML
// escaping. A record is sealed (parse.SealRecord); other lines are not.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if _, ok := v.(record); ok {
		return parse.SealRecord(buf.Bytes()), nil
	}
	return buf.Bytes(), nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// tokenField is a record's token count: null when unknown.
func tokenField(n int, unknown bool) any {
	if unknown {
		return nil
	}
	return n
}
