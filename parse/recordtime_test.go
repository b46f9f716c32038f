package parse

import (
	"strings"
	"testing"
	"time"
)

func TestTimeFieldsFit(t *testing.T) {
	if len(TimeFields) != len(timeRaw{}.others) {
		t.Fatalf("timeRaw keeps %d time fields, TimeFields has %d", len(timeRaw{}.others), len(TimeFields))
	}
}

// ParseRecordFactsAt reads, in one scan, what ParseRecordFacts and
// ParseRecordStamp read apart: the same facts, and a run-less record's
// time (a run's record gives none).
func TestRecordFactsAtAsTheTwo(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	sealed := strings.TrimSuffix(string(SealRecord([]byte(`{"id":"p1","category":"c","run":"r1","prompt_tokens":12,"completion_tokens":30,"finish_reason":"stop","latency_s":1,"finished_at":"2026-12-06T00:00:00Z","content":"a"}`))), "\n")
	sealedNoRun := strings.TrimSuffix(string(SealRecord([]byte(`{"id":"p1","category":"c","prompt_tokens":12,"completion_tokens":30,"finish_reason":"stop","latency_s":1,"finished_at":"2026-12-06T00:00:00Z","content":"a"}`))), "\n")
	for _, line := range []string{
		`{"id": "B2-1", "reasoning_content": "x", "response": "a", "finish_reason": "stop", "usage": {"completion_tokens": 101}, "timestamp": "2026-12-05T05:16:10.123456"}`,
		`{"id": "B2-1", "response": "a", "usage": {"completion_tokens": 101}, "timestamp": 1764912970.5, "created_at": "2026-12-05 05:16:10"}`,
		`{"id": "B2-1", "response": "a", "timestamp": "not a time", "created": 1764912970, "time": "2026-12-05T05:16:10Z"}`,
		`{"id": "B2-1", "response": "a", "finished_at": "2026-12-05T05:16:10Z", "timestamp": 1}`,
		`{"id": "B2-1", "timestamp": "2026-12-05T05:16:10", "timestamp": "2026-12-05T06:16:10"}`,
		`{"id": "B2-1", "response": "a"}`,
		`{"id": "B2-1", "run": "r7", "timestamp": "2026-12-05T05:16:10"}`,
		`{"response": "no id", "timestamp": "2026-12-05T05:16:10"}`,
		`not json`,
		sealed, sealedNoRun,
	} {
		f, at, has, err := ParseRecordFactsAt([]byte(line), loc)
		wf, werr := ParseRecordFacts([]byte(line))
		st, _ := ParseRecordStamp([]byte(line), loc)
		wantHas := werr == nil && wf.Run == "" && st.HasFinished
		if (err == nil) != (werr == nil) || f != wf || has != wantHas || has && !at.Equal(st.Finished) {
			t.Errorf("%s:\n got %+v %v %v %v\nwant %+v %v %v %v", line, f, at, has, err, wf, st.Finished, wantHas, werr)
		}
	}
}
