package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// scaleRoot is a root of 10,000 categories (SW_SCALE_N to change), each
// with 3 prompts and 1 record, and a proxied sshd to read it through.
func scaleRoot(b *testing.B) (int, string, *proxied) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("SW_SCALE_N")); err == nil && v > 0 {
		n = v
	}
	root := b.TempDir()
	for i := 0; i < n; i++ {
		d := filepath.Join(root, "prepared", fmt.Sprintf("C%05d", i))
		must(b, os.MkdirAll(d, 0o755))
		must(b, os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte("{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n"), 0o644))
		must(b, os.WriteFile(filepath.Join(d, "raw_responses.jsonl"), []byte("{\"id\":1}\n"), 0o644))
	}
	b.Setenv("SSH_AUTH_SOCK", "")
	return n, root, newProxied(b, sshdtest.Start(b))
}

// BenchmarkFirstScreen10k: the time from nothing to the first Snapshot
// (the dashboard's first screen, status's answer) of a root with 10,000
// categories (SW_SCALE_N to change), each with 3 prompts and 1 record,
// over a real sshd: dial, the cold batch and the Snapshot.
func BenchmarkFirstScreen10k(b *testing.B) {
	n, root, p := scaleRoot(b)
	// the fallback (no synthwatch on the host) and the deployed binary
	for _, c := range []struct{ name, bin string }{{"fallback", filepath.Join(root, "absent")}, {"binary", testbin.Path(b)}} {
		b.Run(c.name, func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				start := time.Now()
				h := p.dial(b)
				w := NewWatcher(h, Options{Host: "bench", Root: root, ServerURL: closedURL(b), WorkerBin: c.bin}, nil)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // as the dashboard's and status's first read
				snap := w.Poll(ctx)
				cancel()
				took += time.Since(start)
				h.Close()
				if len(snap.Categories) != n || snap.Categories[n-1].Done != 1 || snap.Categories[n-1].Target != 3 {
					b.Fatalf("first snapshot: %d categories, last %+v", len(snap.Categories), snap.Categories[len(snap.Categories)-1])
				}
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "s_first_screen")
		})
	}
}

// BenchmarkSteadyPoll10k: a steady poll (the dashboard's every few
// seconds) of a root with 10,000 categories (SW_SCALE_N to change) over a
// real sshd, one record appended a poll, after the first screen and the
// first steady poll: by the fallback (no synthwatch on the host) and
// by the deployed binary.
func BenchmarkSteadyPoll10k(b *testing.B) {
	n, root, p := scaleRoot(b)
	done := int64(1) // the records of C00000
	for _, c := range []struct{ name, bin string }{{"fallback", filepath.Join(root, "absent")}, {"binary", testbin.Path(b)}} {
		b.Run(c.name, func(b *testing.B) {
			h := p.dial(b)
			defer h.Close()
			w := NewWatcher(h, Options{Host: "bench", Root: root, ServerURL: closedURL(b), WorkerBin: c.bin}, nil)
			poll := func() snapshot.Snapshot {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				return w.Poll(ctx)
			}
			poll()
			first := time.Now()
			poll()
			firstSteady := time.Since(first)
			raw := filepath.Join(root, "prepared", "C00000", "raw_responses.jsonl")
			var took time.Duration
			for b.Loop() {
				f, err := os.OpenFile(raw, os.O_APPEND|os.O_WRONLY, 0)
				must(b, err)
				done++
				fmt.Fprintf(f, "{\"id\":%d}\n", done)
				f.Close()
				start := time.Now()
				snap := poll()
				took += time.Since(start)
				if len(snap.Categories) != n || snap.Categories[0].Done != done {
					b.Fatalf("steady snapshot: %d categories, first %+v", len(snap.Categories), snap.Categories[0])
				}
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "s_poll")
			b.ReportMetric(firstSteady.Seconds(), "s_first_steady")
		})
	}
}
