package remote

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// BenchmarkAgentSteadySums is the agent's share of a steady poll: a
// thinking model's category file of 4 or 64 MB whose kept sums (tokens,
// outcomes, the gate's counts under a [gate] max_length) reach its end
// grows by 20 records of about 4 KB, and the pipeline asks its sums from
// byte 0 to its new size. The cost is the new records' (ns/op alike for
// both sizes, 16 times apart); new-B/op is what was appended.
func BenchmarkAgentSteadySums(b *testing.B) {
	half := strings.Repeat("lorem ipsum dolor sit amet ", 75)
	rec := func(i int) string {
		return string(parse.SealRecord([]byte(fmt.Sprintf(`{"id":"B1-%d","category":"B1","run":"r1","prompt_tokens":700,"completion_tokens":%d,"finish_reason":"stop","latency_s":1.5,"finished_at":"2026-12-06T08:00:00Z","content":%q,"reasoning_content":%q}`, i, 100+i%50, half, half))))
	}
	for _, mb := range []int{4, 64} {
		b.Run(strconv.Itoa(mb)+"MB", func(b *testing.B) {
			b.Setenv("XDG_CACHE_HOME", b.TempDir())
			root := b.TempDir()
			os.WriteFile(filepath.Join(root, parse.ManifestPath), []byte("[gate]\nmax_length = 4096\n"), 0o644)
			d := filepath.Join(root, parse.PreparedDir, "B1")
			os.MkdirAll(d, 0o755)
			raw := filepath.Join(d, parse.RawFile)
			var cold strings.Builder
			next := 0
			for cold.Len() < mb<<20 {
				cold.WriteString(rec(next))
				next++
			}
			os.WriteFile(raw, []byte(cold.String()), 0o644)
			ts := newTokenSums()
			size := int64(cold.Len())
			ts.ranges([]string{raw, "1", strconv.FormatInt(size, 10)}) // the cold sum, kept
			var added int64
			for b.Loop() {
				var grow strings.Builder
				for range 20 {
					grow.WriteString(rec(next))
					next++
				}
				f, _ := os.OpenFile(raw, os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString(grow.String())
				f.Close()
				size += int64(grow.Len())
				ts.ranges([]string{raw, "1", strconv.FormatInt(size, 10)})
				added += int64(grow.Len())
				if g := ts.files[raw].G; g.MaxLength != 4096 || g.Records != int64(next) {
					b.Fatalf("kept gate %+v after %d records", g, next)
				}
			}
			b.ReportMetric(float64(added)/float64(b.N), "new-B/op")
		})
	}
}
