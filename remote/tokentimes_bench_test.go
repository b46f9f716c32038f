package remote

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// oldRecords are n records in the old script's shape (json.dumps, an ISO
// timestamp with no zone, no run), one every 9 s from at, 2 KB each.
func oldRecords(at time.Time, from, n int) string {
	var b strings.Builder
	text := strings.Repeat("lorem ipsum dolor sit amet ", 70)
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"id": "B2-%06d", "reasoning_content": "%s", "response": "a", "finish_reason": "stop", "usage": {"completion_tokens": %d}, "timestamp": "%s"}`+"\n",
			i, text, 100+i%7, at.Add(time.Duration(i)*9*time.Second).Format("2006-01-02T15:04:05.000000"))
	}
	return b.String()
}

// BenchmarkSteadySumTimes: the agent's answer to a steady poll's sum of
// the 100 records appended since (its kept sums hold the rest), on files
// of 10k and 100k old-script records before them: the time and the
// answer's bytes (its T, R, E and M lines) grow with the new records, not
// with the file.
func BenchmarkSteadySumTimes(b *testing.B) {
	for _, before := range []int{10_000, 100_000} {
		b.Run(strconv.Itoa(before), func(b *testing.B) {
			p := filepath.Join(b.TempDir(), "raw_responses.jsonl")
			at := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
			if err := os.WriteFile(p, []byte(oldRecords(at, 0, before)), 0o644); err != nil {
				b.Fatal(err)
			}
			ts := &tokenSums{files: map[string]*sumState{}}
			size := func() int64 { fi, _ := os.Stat(p); return fi.Size() }
			ts.ranges([]string{p, "1", strconv.FormatInt(size(), 10)}) // the cold sum, kept
			n, answer := before, 0
			for b.Loop() {
				b.StopTimer()
				from := size()
				f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString(oldRecords(at, n, 100))
				f.Close()
				n += 100
				b.StartTimer()
				out := ts.ranges([]string{p, strconv.FormatInt(from+1, 10), strconv.FormatInt(size()-from, 10)})
				answer += len(out)
				if !strings.Contains(string(out), " M ") {
					b.Fatalf("no minutes: %s", out)
				}
			}
			b.ReportMetric(float64(answer)/float64(b.N), "answer_B/op")
			b.ReportMetric(float64(len(ts.files[p].Times.Minutes)), "kept_minutes")
		})
	}
}
