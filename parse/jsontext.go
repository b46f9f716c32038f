package parse

import (
	"bytes"
	"encoding/json"
)

// The record readers look at a dozen members of objects that have many;
// a string allocated for each member's name, and encoding/json run on
// each string value they read, were a third of a record's read
// (BenchmarkParseRecordStampPython: 6.0 to 4.3 µs, 17 allocations to 9). The tokens they get were validated by the
// scan that found them, so a token with no backslash is its text as it is.

// recordKeys are the member names the record readers switch on:
// ParseRecordStamp, plainHeadWith, outcomeRaw.take and timeRaw.take
// (FinishedField and TimeFields too).
var recordKeys = [...]string{"id", "run", "text", "time", "usage", "output", "content", "created", "choices", "response",
	"meta_info", "timestamp", "created_at", "finished_at", "finish_reason", "prompt_tokens", "completion_tokens", "reasoning_content"}

// recordKey is a member's name (its token, quotes included) when one of
// the record readers looks at it, else "". Comparing string(bytes)
// allocates nothing, and a name of another length costs one compare: a
// map's hash was slower.
func recordKey(tok []byte) string {
	raw := tok[1 : len(tok)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		raw = []byte(decodeKey(tok))
	}
	for _, k := range recordKeys {
		if string(raw) == k {
			return k
		}
	}
	return ""
}

// jsonText is a validated JSON string token's text; false when tok is not
// a string.
func jsonText(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1]), true
	}
	var s string
	return s, json.Unmarshal(tok, &s) == nil
}
