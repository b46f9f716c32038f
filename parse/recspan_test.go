package parse

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// oldScriptLines are records as the old script writes them: its time in a
// field of its own, every 4 s up to last.
func oldScriptLines(n int, last time.Time, field string) string {
	var b strings.Builder
	for i := n - 1; i >= 0; i-- {
		t := last.Add(-time.Duration(i) * 4 * time.Second)
		switch field {
		case "timestamp":
			fmt.Fprintf(&b, `{"id":"p%d","output":"x","timestamp":%d.25}`+"\n", n-i, t.Unix())
		default:
			fmt.Fprintf(&b, `{"id":"p%d","output":"x",%q:%q}`+"\n", n-i, field, t.Format("2006-01-02T15:04:05"))
		}
	}
	return b.String()
}

func TestTailRecordSpan(t *testing.T) {
	now := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	last := now.Add(-3 * time.Second)
	ts := func(i int) time.Time { return last.Add(-time.Duration(i) * 4 * time.Second) }
	for _, c := range []struct {
		name string
		tail string
		cut  bool
		want RecordSpan
	}{
		{"epoch seconds", oldScriptLines(10, last, "timestamp"), false, RecordSpan{10, ts(9).Add(250 * time.Millisecond), last.Add(250 * time.Millisecond)}},
		{"zone-less isoformat", oldScriptLines(5, last, "created_at"), false, RecordSpan{5, ts(4), last}},
		{"finished_at before time", `{"id":"a","finished_at":"2026-12-06T04:59:50Z","time":"2026-12-06T04:00:00"}` + "\n" +
			`{"id":"b","finished_at":"2026-12-06T04:59:55Z"}` + "\n", false, RecordSpan{2, now.Add(-10 * time.Second), now.Add(-5 * time.Second)}},
		// the first line of a cut read is partial; the last one, unended, is being written
		{"cut at both ends", `,"timestamp":1}` + "\n" + oldScriptLines(3, last, "time") + `{"id":"p9","time":"2026-`, true, RecordSpan{3, ts(2), last}},
		{"a future time is no witness", oldScriptLines(3, last, "time") + `{"id":"f","time":"2026-12-06T06:00:00"}` + "\n", false, RecordSpan{3, ts(2), last}},
		{"unparsable times and lines", oldScriptLines(2, last, "time") + `{"id":"u","time":"yesterday"}` + "\n" + "not json\n" + `{"id":"v"}` + "\n", false, RecordSpan{2, ts(1), last}},
		{"one record", oldScriptLines(1, last, "time"), false, RecordSpan{1, last, last}},
		{"nothing whole", `{"id":"p1","time":"2026-12-06T04:59:57"}`, false, RecordSpan{}},
		// 200 records every 4 s: the window holds the last 5 minutes' 76
		{"the window ends at the newest", oldScriptLines(200, last, "time"), false, RecordSpan{76, ts(75), last}},
	} {
		got := TailRecordSpan([]byte(c.tail), c.cut, time.UTC, now)
		if got.Records != c.want.Records || !got.First.Equal(c.want.First) || !got.Last.Equal(c.want.Last) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestSpanRate(t *testing.T) {
	now := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	last := now.Add(-3 * time.Second)
	span := func(tail string, cut bool) RecordSpan { return TailRecordSpan([]byte(tail), cut, time.UTC, now) }
	lines := oldScriptLines(200, last, "time")
	for _, c := range []struct {
		name  string
		s     RecordSpan
		limit time.Duration
		want  float64
		ok    bool
	}{
		{"a record every 4 s", span(oldScriptLines(10, last, "time"), false), 0, 15, true},
		{"one record", span(oldScriptLines(1, last, "time"), false), 0, 0, false},
		{"none", RecordSpan{}, 0, 0, false},
		{"older than the stall limit", span(oldScriptLines(10, now.Add(-11*time.Minute), "time"), false), 0, 0, false},
		{"within a longer limit", span(oldScriptLines(10, now.Add(-11*time.Minute), "time"), false), time.Hour, 15 * 36 / float64(36+660-4-3+3), true},
		{"ahead of this clock", RecordSpan{3, now.Add(2 * time.Minute), now.Add(3 * time.Minute)}, 0, 0, false},
		{"all at one moment", RecordSpan{16, last, last}, 0, 0, false},
		// the bytes read reach 20 records back, not the window's 5 minutes: the rate of those
		{"a window the bytes do not reach", span(lines[len(lines)-20*len(`{"id":"p200","output":"x","time":"2026-12-06T04:59:57"}`+"\n"):], true), 0, 15, true},
	} {
		got, ok := SpanRate(c.s, now, c.limit)
		if ok != c.ok || (got-c.want) > 1e-9 || (c.want-got) > 1e-9 {
			t.Errorf("%s: %v %v, want %v %v (%+v)", c.name, got, ok, c.want, c.ok, c.s)
		}
	}
}
