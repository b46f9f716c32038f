package digest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// BenchmarkDigestRecords digests a root of ten categories of ~1 KB
// records (SW_BENCH_ROOT_MB in all, default 64; 1024 for a real night's
// gigabyte) as two writers leave them: the old Python script's (an
// isoformat finished_at, reasoning_content, finish_reason; every line
// validated in full) and the Go worker's (sealed: read up to the members
// needed); and each again with the stamps an earlier digest kept (-kept).
// It reports the digest's MB/s over the records' bytes.
func BenchmarkDigestRecords(b *testing.B) {
	mb := 64
	if v, err := strconv.Atoi(os.Getenv("SW_BENCH_ROOT_MB")); err == nil && v > 0 {
		mb = v
	}
	for _, shape := range []string{"python", "worker", "python-kept", "worker-kept"} {
		b.Run(shape, func(b *testing.B) {
			root, size := recordsRoot(b, mb, strings.HasPrefix(shape, "worker"))
			since := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
			o := Options{Root: root, Since: since, Now: since.Add(36 * time.Hour), Every: time.Hour, Loc: time.UTC}
			if strings.HasSuffix(shape, "-kept") { // a report after one that kept the stamps
				o.Keep = b.TempDir()
				if _, err := Build(o); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				s, err := Build(o)
				if err != nil {
					b.Fatal(err)
				}
				if s.Categories[0].Records == 0 || s.Categories[0].Error != "" {
					b.Fatalf("nothing read: %+v", s.Categories[0])
				}
			}
			b.ReportMetric(float64(size)/(1<<20)/(b.Elapsed().Seconds()/float64(b.N)), "MB/s")
		})
	}
}

func recordsRoot(b *testing.B, mb int, sealed bool) (string, int64) {
	root := b.TempDir()
	start := time.Date(2026, 12, 5, 20, 0, 0, 0, time.UTC)
	rec := func(n string, k int) []byte {
		ts := start.Add(time.Duration(k) * 30 * time.Millisecond)
		if sealed {
			return parse.SealRecord(fmt.Appendf(nil, `{"id":"%s-%d","completion_tokens":250,"run":"r1","finished_at":%q,"prompt_tokens":40,"finish_reason":"stop","reasoning_content":"hmm","content":"%s"}`,
				n, k, ts.Format(time.RFC3339Nano), strings.Repeat("a", 800)))
		}
		return fmt.Appendf(nil, `{"id": "%s-%d", "finished_at": %q, "completion_tokens": 250, "prompt_tokens": 40, "finish_reason": "stop", "reasoning_content": "hmm", "content": "%s"}`+"\n",
			n, k, ts.Format("2006-01-02T15:04:05.999999"), strings.Repeat("a", 800))
	}
	per := mb << 20 / 10 / len(rec("B00_cat", 0))
	var size int64
	for i := range 10 {
		n := fmt.Sprintf("B%02d_cat", i)
		d := filepath.Join(root, parse.PreparedDir, n)
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(filepath.Join(d, parse.RawFile))
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		for k := range per {
			r := rec(n, k)
			size += int64(len(r))
			w.Write(r)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return root, size
}
