package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// BenchmarkWatcherGrowingPoll is a poll of a running job over SSH: one
// category's file grows by 20 records of about 2 KB between polls, on top
// of a 4 MB file counted at the cold start. B/poll less new-B/poll is what
// the poll costs beyond the new bytes themselves.
func BenchmarkWatcherGrowingPoll(b *testing.B) {
	s := sshdtest.Start(b)
	root := b.TempDir()
	text := strings.Repeat("x", 2000)
	rec := func(i int) string {
		return fmt.Sprintf(`{"id":"B1-%d","category":"B1","run":"r1","prompt_tokens":10,"completion_tokens":%d,"content":%q}`+"\n", i, 100+i%50, text)
	}
	var cold strings.Builder
	for i := 0; i < 2000; i++ {
		cold.WriteString(rec(i))
	}
	d := filepath.Join(root, "prepared", "B1")
	os.MkdirAll(d, 0o755)
	os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte(prompts("B1", 100000)), 0o644)
	raw := filepath.Join(d, "raw_responses.jsonl")
	os.WriteFile(raw, []byte(cold.String()), 0o644)
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	h, _ := dialThroughProxy(b, s)
	w := NewWatcher(h, Options{Host: "bench", Root: root, ServerURL: "http://127.0.0.1:1"}, nil)
	for i := 0; i < 3; i++ {
		w.Poll(context.Background())
	}
	next, added := 2000, 0
	w0, n := h.Wire(), 0
	for b.Loop() {
		var grow strings.Builder
		for j := 0; j < 20; j++ {
			grow.WriteString(rec(next))
			next++
		}
		f, _ := os.OpenFile(raw, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(grow.String())
		f.Close()
		added += grow.Len()
		w.Poll(context.Background())
		n++
	}
	w1 := h.Wire()
	b.ReportMetric(float64(w1.Sent+w1.Received-w0.Sent-w0.Received)/float64(n), "B/poll")
	b.ReportMetric(float64(added)/float64(n), "new-B/poll")
}
