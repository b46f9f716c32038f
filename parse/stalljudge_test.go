package parse

import (
	"testing"
	"time"
)

func TestStallLimitIsTheSettingAlone(t *testing.T) {
	if got := StallLimit(0); got != DefaultStallAfter {
		t.Errorf("StallLimit(0) = %s", got)
	}
	if got := StallLimit(20 * time.Second); got != 20*time.Second {
		t.Errorf("StallLimit(20s) = %s", got)
	}
}

func TestBecameCurrent(t *testing.T) {
	now := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, c := range []struct {
		name string
		f    CurrentFacts
		want time.Time
		weak bool
	}{
		{"worker.json", CurrentFacts{JSONSince: ago(time.Hour), LogAt: ago(time.Minute)}, ago(time.Hour), false},
		{"no header for it", CurrentFacts{PrevLast: ago(time.Hour)}, time.Time{}, false},
		{"a header read as written", CurrentFacts{LogAt: now, HeaderAt: ago(time.Minute), PrevLast: ago(time.Hour)}, ago(time.Minute), false},
		{"a log that ends with its header", CurrentFacts{LogAt: ago(2 * time.Hour), HeaderOnly: true, PrevLast: ago(3 * time.Hour)}, ago(2 * time.Hour), false},
		// the hang: tracebacks since the header keep the log fresh
		{"the previous category's last record", CurrentFacts{LogAt: ago(time.Minute), PrevLast: ago(time.Hour)}, ago(time.Hour), false},
		{"never later than the log", CurrentFacts{LogAt: ago(2 * time.Hour), PrevLast: ago(time.Hour)}, ago(2 * time.Hour), false},
		{"the writer's start", CurrentFacts{LogAt: ago(time.Minute), WriterStart: ago(time.Hour)}, ago(time.Hour), false},
		{"a writer started with the log's last line", CurrentFacts{LogAt: ago(time.Minute), WriterStart: ago(time.Minute + time.Second)}, ago(time.Minute), true},
		{"a header and nothing else", CurrentFacts{LogAt: ago(time.Minute)}, ago(time.Minute), true},
	} {
		got, weak := BecameCurrent(c.f)
		if !got.Equal(c.want) || weak != c.weak {
			t.Errorf("%s: %s weak %v, want %s weak %v", c.name, got, weak, c.want, c.weak)
		}
	}
}

func TestCategoryErrors(t *testing.T) {
	three := 3
	if got := CategoryErrors(ErrorFacts{ErrLines: 1, LogFailures: 8, LogProgress: 2}); got != 8 {
		t.Errorf("the most witnessed: %d", got)
	}
	if got := CategoryErrors(ErrorFacts{ErrLines: 9, LogFailures: 8, JSONFailed: &three}); got != 3 {
		t.Errorf("worker.json's own count: %d", got)
	}
}

// A rate every view can claim at first sight: worker.json's while fresh,
// the log's progress line while the log is, else the records' own times;
// with none of them (an empty log, no worker.json, undated records) none,
// whatever the file's growth.
func TestWitnessedRate(t *testing.T) {
	now := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		f    RateFacts
		want float64
		ok   bool
	}{
		{"worker.json fresh", RateFacts{WorkerRate: 60, WorkerAt: now.Add(-5 * time.Second), LogRate: 30, LogAt: now}, 60, true},
		{"worker.json old, the log fresh", RateFacts{WorkerRate: 60, WorkerAt: now.Add(-time.Minute), LogRate: 30, LogAt: now.Add(-time.Minute)}, 30, true},
		{"an old log line", RateFacts{LogRate: 66, LogAt: now.Add(-25 * time.Minute)}, 0, false},
		{"within a set limit", RateFacts{LogRate: 66, LogAt: now.Add(-25 * time.Minute), Limit: time.Hour}, 66, true},
		{"no witness", RateFacts{}, 0, false},
		{"the records' times", RateFacts{Records: RecordSpan{Records: 11, First: now.Add(-50 * time.Second), Last: now}}, 12, true},
		{"an old log line, fresh records", RateFacts{LogRate: 66, LogAt: now.Add(-25 * time.Minute),
			Records: RecordSpan{Records: 3, First: now.Add(-20 * time.Second), Last: now}}, 6, true},
	} {
		c.f.Now = now
		got, ok := WitnessedRate(c.f)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
