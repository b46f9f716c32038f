package parse

import (
	"bytes"
	"encoding/json"
	"errors"
)

// RecordHead is what resume and counting need from one JSONL record: its id,
// as the raw JSON token (so "7" and 7 stay different ids), and its completion
// tokens when it has them.
type RecordHead struct {
	ID               []byte
	CompletionTokens int64
	HasTokens        bool
}

var (
	idHead   = []byte(`{"id":`)
	ctMarker = []byte(`,"completion_tokens":`)
	// ErrNoID is returned for a record without an "id".
	ErrNoID = errors.New("record has no id")
)

// headWindow bounds how far into a record the fast path looks for
// completion_tokens; the worker writes it before the long text fields.
const headWindow = 1024

// ParseRecordHead reads the id (and completion_tokens) of one JSONL line. The
// worker's own records start with {"id": and are read without decoding the
// rest of the line; any other shape falls back to a JSON decode. The ID
// slice aliases line.
func ParseRecordHead(line []byte) (RecordHead, error) {
	if bytes.HasPrefix(line, idHead) {
		if h, ok := fastHead(line); ok {
			return h, nil
		}
	}
	var v struct {
		ID               json.RawMessage `json:"id"`
		CompletionTokens *int64          `json:"completion_tokens"`
	}
	if err := json.Unmarshal(line, &v); err != nil {
		return RecordHead{}, err
	}
	if len(v.ID) == 0 || string(v.ID) == "null" {
		return RecordHead{}, ErrNoID
	}
	h := RecordHead{ID: compactToken(v.ID)}
	if v.CompletionTokens != nil {
		h.CompletionTokens, h.HasTokens = *v.CompletionTokens, true
	}
	return h, nil
}

func fastHead(line []byte) (RecordHead, bool) {
	rest := line[len(idHead):]
	var end int
	switch {
	case len(rest) > 0 && rest[0] == '"':
		end = stringEnd(rest)
	default:
		end = 0
		for end < len(rest) && rest[end] != ',' && rest[end] != '}' {
			end++
		}
		if end == 0 || end == len(rest) {
			return RecordHead{}, false
		}
	}
	if end <= 0 {
		return RecordHead{}, false
	}
	if string(rest[:end]) == "null" {
		return RecordHead{}, false
	}
	h := RecordHead{ID: rest[:end]}
	win := rest[end:]
	if len(win) > headWindow {
		win = win[:headWindow]
	}
	if i := bytes.Index(win, ctMarker); i >= 0 {
		n, ok := leadingInt(win[i+len(ctMarker):])
		if ok {
			h.CompletionTokens, h.HasTokens = n, true
		}
	}
	return h, true
}

// stringEnd returns the length of the JSON string token at the start of b,
// quotes included, or -1.
func stringEnd(b []byte) int {
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

func leadingInt(b []byte) (int64, bool) {
	var n int64
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	return n, i > 0
}

func compactToken(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
