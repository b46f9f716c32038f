package parse

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkRunlessRecordTime: what the token sums read of one old-script
// record (no run: json.dumps, an ISO timestamp, 15 KB), without its time,
// with it in the same scan (ParseRecordFactsAt, as the agent and the
// dashboard's tally read every record), and with ParseRecordStamp after
// ParseRecordFacts (the first version).
func BenchmarkRunlessRecordTime(b *testing.B) {
	content := strings.Repeat(`lorem ipsum \u00e9t\u00e9 \"dolor\" sit\namet `, 333)
	line := []byte(`{"id": "B2-00007", "reasoning_content": "` + content + `", "response": "a", "finish_reason": "stop", "usage": {"completion_tokens": 3800}, "timestamp": "2026-12-05T05:16:10.123456"}`)
	b.Run("facts", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if f, err := ParseRecordFacts(line); err != nil || f.CompletionTokens != 3800 {
				b.Fatal(f, err)
			}
		}
	})
	b.Run("facts+time, one scan", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		var r RecordTimes
		for b.Loop() {
			f, at, has, err := ParseRecordFactsAt(line, time.UTC)
			if err != nil || !has {
				b.Fatal(f, err)
			}
			r.Add(at, true, OneRecord(f.CompletionTokens, f.HasTokens))
		}
	})
	b.Run("facts+time, two scans", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		var r RecordTimes
		for b.Loop() {
			f, err := ParseRecordFacts(line)
			st, err2 := ParseRecordStamp(line, time.UTC)
			if err != nil || err2 != nil || !st.HasFinished {
				b.Fatal(f, err, err2)
			}
			r.Add(st.Finished, true, OneRecord(f.CompletionTokens, f.HasTokens))
		}
	})
}

// BenchmarkPlaceRecords: the laptop's placing of a file's minutes in the
// eras, each poll that judges its category: the bound (16,384 minutes)
// over 4 eras.
func BenchmarkPlaceRecords(b *testing.B) {
	var r RecordTimes
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range MaxMinutes {
		r.Add(at.Add(time.Duration(i)*time.Minute), true, OneRecord(100, true))
	}
	var ls []ServerLaunch
	for i, kv := range []string{"fp8_e4m3", "auto", "fp8_e4m3", "auto"} {
		ls = append(ls, ServerLaunch{At: at.Add(time.Duration(i) * 60 * time.Hour), Settings: []string{"kv_cache_dtype=" + kv}})
	}
	eras := Eras(ls)
	for b.Loop() {
		if p := PlaceRecords(eras, r); len(p.Eras) != 2 {
			b.Fatal(p)
		}
	}
}
