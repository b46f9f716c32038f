package parse

import (
	"bytes"
)

// RecordFacts is what the dashboard tallies per record: its completion
// tokens (as RecordHead reads them) and the run that wrote it.
type RecordFacts struct {
	CompletionTokens int64
	HasTokens        bool
	// Run is the record's top-level "run" string; "" for a record written
	// before runs were recorded (the old script), or a non-string run.
	Run string
	// Outcome is how it ended and whether its answer is empty.
	Outcome Outcome
	// PromptTokens, read as CompletionTokens is (prompt_tokens); HasPrompt
	// says whether one was found
	PromptTokens int64
	HasPrompt    bool
	// Gate is what the training-readiness gate reads of it (gate.go)
	Gate GateFacts
}

// ParseRecordFacts reads one JSONL line (without its '\n'; a '\r', a BOM
// and surrounding blanks are accepted). A line that is not a record (see
// ParseRecordHead) is an error.
func ParseRecordFacts(line []byte) (RecordFacts, error) {
	if h, ok := fastHead(line); ok { // the Go worker's sealed record: no scan
		body := afterID(line)
		o := sealedOutcome(body)
		f := RecordFacts{CompletionTokens: h.CompletionTokens, HasTokens: h.HasTokens, Run: sealedRun(body), Outcome: o.judge()}
		f.Gate = o.gate(f.Outcome)
		f.PromptTokens, f.HasPrompt = sealedPrompt(body)
		return f, nil
	}
	var o outcomeRaw // the members it needs, in the scan that reads its head
	h, err := plainHeadWith(bytes.TrimPrefix(line, bom), &o)
	if err != nil {
		return RecordFacts{}, err
	}
	return plainFacts(h, &o), nil
}

// plainFacts are the facts of a record read by plainHeadWith.
func plainFacts(h RecordHead, o *outcomeRaw) RecordFacts {
	f := RecordFacts{CompletionTokens: h.CompletionTokens, HasTokens: h.HasTokens, Run: rawString(o.run), Outcome: o.judge()}
	f.Gate = o.gate(f.Outcome)
	f.PromptTokens, f.HasPrompt = o.promptTokens()
	return f
}

var runKey = []byte(`"run"`)
