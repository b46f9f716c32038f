package digest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/parse"
)

// BenchmarkDigestWorkerLog: the worker log read once for the kills, the
// waits and the old script's end, every line parsed once; MB/s of log. A
// log of the worker's lines and the old script's tracebacks, 200,000 lines.
func BenchmarkDigestWorkerLog(b *testing.B) {
	r := digesttest.NewRoot(b)
	r.Start("A", "20261202T000000Z-1", 1, hm(0, 0))
	r.Records("A", "20261202T000000Z-1", hm(0, 1), hm(1, 0))
	var log strings.Builder
	log.WriteString(parse.FormatBanner("dev", 1, "20261202T000000Z-1", parse.DefaultServerURL, "chat", 1) + "\n")
	log.WriteString(parse.FormatProcessing("A", "SHORT") + "\n")
	for i := 0; log.Len() < 20<<20; i++ {
		switch i % 8 {
		case 0:
			log.WriteString(parse.FormatProgress(i, 1000000, 3, 1.2, 230, time.Hour, true) + " window 64\n")
		case 1:
			log.WriteString("Traceback (most recent call last):\n  File \"/opt/run_inference.py\", line 61, in call\n    with urllib.request.urlopen(req, timeout=600) as r:\nTimeoutError: timed out\n")
		case 2:
			log.WriteString(parse.FormatHeartbeat(64, time.Duration(i)*time.Second) + "\n")
		default:
			fmt.Fprintf(&log, "A: id %d failed: server answered 500: internal error\n", i)
		}
	}
	p := filepath.Join(r.Dir, filepath.FromSlash(parse.WorkerLogPath))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(log.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(log.Len()))
	b.ResetTimer()
	for b.Loop() {
		if _, err := digest.Build(digest.Options{Root: r.Dir, Since: hm(0, 0), Now: hm(2, 0), Loc: time.UTC}); err != nil {
			b.Fatal(err)
		}
	}
}
