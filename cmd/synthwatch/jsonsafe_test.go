package main

import (
	"encoding/json"
	"testing"
)

// The JSON a terminal may show escapes DEL, C1 and format characters, and
// decodes to the same strings.
func TestEscapeTermUnsafe(t *testing.T) {
	in := []string{bidiName, zwName, "del\x7f c1\u009b tag\U000E0041 ok é"}
	b, _ := json.Marshal(in)
	esc := escapeTermUnsafe(b)
	if f := formatChars(string(esc)); len(f) > 0 {
		t.Errorf("%+q left in %s", f, esc)
	}
	for _, r := range string(esc) {
		if r == 0x7f || r >= 0x80 && r <= 0x9f {
			t.Errorf("%U left in %s", r, esc)
		}
	}
	var out []string
	if err := json.Unmarshal(esc, &out); err != nil || len(out) != 3 || out[0] != in[0] || out[1] != in[1] || out[2] != in[2] {
		t.Errorf("%s decodes to %+q (%v), want %+q", esc, out, err, in)
	}
	if clean := []byte(`{"a":"é"}`); &escapeTermUnsafe(clean)[0] != &clean[0] {
		t.Error("clean JSON was copied")
	}
}
