package parse

import (
	"testing"
	"time"
)

func TestParseRecordStamp(t *testing.T) {
	loc := time.FixedZone("host", 2*3600)
	want := time.Date(2026, 2, 3, 14, 5, 12, 0, time.UTC)
	sealedLine := SealRecord([]byte(`{"id":"a","category":"B1","run":"r1","prompt_tokens":3,"completion_tokens":217,"finish_reason":"stop","latency_s":1,"finished_at":"2026-02-03T14:05:12Z","content":"long text"}`))
	cases := []struct {
		name, line string
		tokens     int64
		run        string
		at         time.Time
		hasAt      bool
	}{
		{"sealed worker record", string(sealedLine[:len(sealedLine)-1]), 217, "r1", want, true},
		{"python json.dumps, other key order", `{"finished_at": "2026-02-03T16:05:12+02:00", "content": "x", "completion_tokens": 9, "id": 1}`, 9, "", want, true},
		{"BOM and CRLF, zone-less time read in loc", "\xef\xbb\xbf{\"id\":2,\"usage\":{\"completion_tokens\":5},\"finished_at\":\"2026-02-03T16:05:12.000000\"}\r", 5, "", want, true},
		{"unix seconds", `{"id":3,"meta_info":{"completion_tokens":"7"},"finished_at":1770127512,"run":"old"}`, 7, "old", want, true},
		{"unix milliseconds in a string", `{"id":3,"completion_tokens":1,"finished_at":"1770127512000"}`, 1, "", want, true},
		{"no finished_at", `{"id":4,"completion_tokens":2}`, 2, "", time.Time{}, false},
		{"finished_at not a time", `{"id":4,"completion_tokens":2,"finished_at":"yesterday"}`, 2, "", time.Time{}, false},
		{"tampered seal falls back to a full read", string(sealedLine[:len(sealedLine)-12]) + `"00000000"}`, 217, "r1", want, true},
	}
	for _, c := range cases {
		s, err := ParseRecordStamp([]byte(c.line), loc)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if s.CompletionTokens != c.tokens || !s.HasTokens || s.Run != c.run || s.HasFinished != c.hasAt || !s.Finished.Equal(c.at) {
			t.Errorf("%s: got %+v, want tokens %d run %q at %v (%v)", c.name, s, c.tokens, c.run, c.at, c.hasAt)
		}
	}
	for _, bad := range []string{`{"id":1,`, `[1,2]`, ``, `{"id":1}{`} {
		if _, err := ParseRecordStamp([]byte(bad), loc); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func BenchmarkParseRecordStamp(b *testing.B) {
	content := make([]byte, 8000)
	for i := range content {
		content[i] = 'a' + byte(i%26)
	}
	line := SealRecord([]byte(`{"id":"p-1","category":"B1","run":"r1","prompt_tokens":3,"completion_tokens":217,"finish_reason":"stop","latency_s":1,"finished_at":"2026-02-03T14:05:12.123456789Z","content":"` + string(content) + `"}`))
	line = line[:len(line)-1]
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := ParseRecordStamp(line, time.UTC); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseRecordStampPython reads a record another tool wrote (no
// seal): the whole line is validated.
func BenchmarkParseRecordStampPython(b *testing.B) {
	content := make([]byte, 8000)
	for i := range content {
		content[i] = 'a' + byte(i%26)
	}
	line := []byte(`{"content": "` + string(content) + `", "finished_at": "2026-02-03T14:05:12.123456", "run": "r1", "usage": {"completion_tokens": 217}, "id": 7}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := ParseRecordStamp(line, time.UTC); err != nil {
			b.Fatal(err)
		}
	}
}
