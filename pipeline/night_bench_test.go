package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// nightJob appends what a running job writes in one default poll (2 s) at
// the users' 930 tok/s: two 1000-token records, a server log line a second,
// and a progress line every 50 records.
type nightJob struct {
	root string
	n    int
}

func (j *nightJob) step(tb testing.TB) {
	cat := "B2_opencodeinstruct"
	var rec strings.Builder
	for i := 0; i < 2; i++ {
		fmt.Fprintf(&rec, `{"id":"%s-%d","category":"%s","run":"r","prompt_tokens":310,"completion_tokens":1000,"finish_reason":"stop","content":"%s"}`+"\n", cat, 2500+j.n, cat, strings.Repeat("w", 4000))
		j.n++
	}
	appendTo(tb, filepath.Join(j.root, "prepared", cat, parse.RawFile), rec.String())
	appendTo(tb, filepath.Join(j.root, "logs", "sglang_inference.log"), strings.Repeat("[2026-12-01 09:00:00] Decode batch, #running-req: 16, #token: 4096, token usage: 0.02, gen throughput (token/s): 930.00, #queue-req: 0\n", 2))
	if j.n%50 < 2 {
		appendTo(tb, filepath.Join(j.root, "logs", "inference_all.log"), fmt.Sprintf("%d/6000 (1 err) 0.9 req/s avg_comp=1000tok ETA=1.4h\n", 2500+j.n))
	}
}

// BenchmarkNightBytes: the bytes a watcher moves per hour of a running job
// (nightJob) at the default poll (2 s, the clock advanced by it between
// polls: vitals every 10 s, disk every minute), through a proxy that adds
// 50 ms of RTT, with the server's /metrics read through the link. The
// job's own new bytes are counted apart (job_MB/hour): reading them is the
// part that grows with the job.
func BenchmarkNightBytes(b *testing.B) {
	s := sshdtest.Start(b)
	root, url, _ := coldRoot(b)
	p := newProxied(b, s)
	b.Setenv("SSH_AUTH_SOCK", "")
	h := p.dial(b)
	b.Cleanup(func() { h.Close() })
	p.px.SetDelay(25 * time.Millisecond)
	c := newClock()
	w := NewWatcher(h, Options{Host: "bench", Root: root, ServerURL: url, Now: c.now}, nil)
	job := &nightJob{root: root}
	for i := 0; i < 40; i++ { // past the cold poll and the first full rescans
		job.step(b)
		w.Poll(context.Background())
		c.advance(2 * time.Second)
	}
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(root, "prepared", "B2_opencodeinstruct", parse.RawFile))
		must(b, err)
		return fi.Size()
	}
	w0, s0, n := h.Wire(), size(), 0
	for b.Loop() {
		job.step(b)
		if snap := w.Poll(context.Background()); snap.Connection.Stale() {
			b.Fatal("stale poll")
		}
		c.advance(2 * time.Second)
		n++
	}
	w1 := h.Wire()
	perPoll := float64(w1.Sent+w1.Received-w0.Sent-w0.Received) / float64(n)
	b.ReportMetric(perPoll, "B/poll")
	b.ReportMetric(perPoll*1800/1e6, "MB/hour")
	b.ReportMetric(float64(size()-s0)/float64(n)*1800/1e6, "job_MB/hour")
}
