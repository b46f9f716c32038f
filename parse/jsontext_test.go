package parse

import (
	"encoding/json"
	"testing"
)

// Every name a record reader switches on is one recordKey knows, plain or
// escaped, and any other name is none of them.
func TestRecordKeyKnowsTheReadersNames(t *testing.T) {
	names := append([]string{"id", "completion_tokens", "usage", "meta_info", "run", "prompt_tokens",
		"finish_reason", "content", "text", "response", "output", "choices", "reasoning_content", FinishedField}, TimeFields...)
	for _, n := range names {
		plain, _ := json.Marshal(n)
		if got := recordKey(plain); got != n {
			t.Errorf("recordKey(%s) = %q", plain, got)
		}
		escaped := []byte(`"\u00` + string("0123456789abcdef"[n[0]>>4]) + string("0123456789abcdef"[n[0]&15]) + n[1:] + `"`)
		if got := recordKey(escaped); got != n {
			t.Errorf("recordKey(%s) = %q", escaped, got)
		}
	}
	for _, other := range []string{`"ids"`, `""`, `"Run"`, `"content "`} {
		if got := recordKey([]byte(other)); got != "" {
			t.Errorf("recordKey(%s) = %q, want none", other, got)
		}
	}
}

func TestJSONText(t *testing.T) {
	for tok, want := range map[string]string{`"stop"`: "stop", `"a\"b"`: `a"b`, `"\u0041"`: "A", `""`: ""} {
		if got, ok := jsonText([]byte(tok)); !ok || got != want {
			t.Errorf("jsonText(%s) = %q, %v", tok, got, ok)
		}
	}
	for _, tok := range []string{`12`, `null`, `"`, `{"a":1}`} {
		if _, ok := jsonText([]byte(tok)); ok {
			t.Errorf("jsonText(%s): read as a string", tok)
		}
	}
}
