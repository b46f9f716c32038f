package worker

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/sim"
)

// BenchmarkWorkerVsHey: requests per second of the real worker binary
// against sim at zero latency with tiny answers, concurrency 256, next to
// hey on the same server and concurrency. Target: >= 50% of hey's rate.
func BenchmarkWorkerVsHey(b *testing.B) {
	const n = 20000
	s := startSim(b, sim.Options{Instant: true, Capacity: 1024})
	bin := binary(b)
	var workerRate float64
	for b.Loop() {
		root := makeRoot(b, map[string]int{"B1": n})
		start := time.Now()
		out, err := exec.Command(bin, "worker", "--root", root, "--server", s.URL(), "--concurrency", "256").CombinedOutput()
		if err != nil {
			b.Fatalf("worker: %v\n%s", err, out)
		}
		workerRate = n / time.Since(start).Seconds()
	}
	b.ReportMetric(workerRate, "worker_req/s")
	if hey, err := exec.LookPath("hey"); err == nil {
		body := filepath.Join(b.TempDir(), "body.json")
		os.WriteFile(body, []byte(`{"rid":"x","messages":[{"role":"user","content":"question 1"}],"max_tokens":10240,"stream":false}`), 0o644)
		out, err := exec.Command(hey, "-n", strconv.Itoa(n), "-c", "256", "-m", "POST", "-T", "application/json", "-D", body, s.URL()+"/v1/chat/completions").CombinedOutput()
		if err != nil {
			b.Fatalf("hey: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindSubmatch(out)
		if m == nil {
			b.Fatalf("hey output: %s", out)
		}
		heyRate, _ := strconv.ParseFloat(string(m[1]), 64)
		b.ReportMetric(heyRate, "hey_req/s")
		b.ReportMetric(100*workerRate/heyRate, "%_of_hey")
	} else {
		b.Log("hey not installed (apt-get install -y hey): no comparison")
	}
}

// BenchmarkResumeScan: the resume scan over a page-cached 1 GB file of
// 15 KB lines, next to wc -l on the same file. Target: >= 500 MB/s.
func BenchmarkResumeScan(b *testing.B) {
	path := filepath.Join(b.TempDir(), "raw_responses.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	content := strings.Repeat("lorem ipsum dolor sit amet ", 555) // ~15 KB
	var size int64
	for i := 0; size < 1<<30; i++ {
		n, _ := fmt.Fprintf(w, `{"id":"B1-%d","category":"B1","run":"r","prompt_tokens":12,"completion_tokens":3800,"finish_reason":"stop","latency_s":1.5,"finished_at":"2026-11-29T00:00:00Z","content":"%s"}`+"\n", i, content)
		size += int64(n)
	}
	w.Flush()
	f.Close()
	if _, err := ScanFile(path); err != nil { // warm the page cache
		b.Fatal(err)
	}
	b.SetBytes(size)
	var s Scan
	for b.Loop() {
		if s, err = ScanFile(path); err != nil {
			b.Fatal(err)
		}
	}
	if s.Lines == 0 || s.CompletionTokens != int64(s.Lines)*3800 {
		b.Fatalf("scan: %+v", s.Lines)
	}
	start := time.Now()
	out, err := exec.Command("wc", "-l", path).Output()
	if err != nil {
		b.Fatal(err)
	}
	wc := time.Since(start).Seconds()
	if got, _ := strconv.Atoi(strings.Fields(string(out))[0]); got != s.Lines {
		b.Fatalf("wc -l %d, scan %d", got, s.Lines)
	}
	b.ReportMetric(float64(size)/1e6/wc, "wc_MB/s")
}

// BenchmarkWorkerPeakRSS: the worker's peak RSS at concurrency 256 with
// 15 KB answers. Target: <= 200 MB.
func BenchmarkWorkerPeakRSS(b *testing.B) {
	const n = 5000
	s := startSim(b, sim.Options{Instant: true, Capacity: 1024, ContentBytes: 15000})
	bin := binary(b)
	var peakMB float64
	for b.Loop() {
		root := makeRoot(b, map[string]int{"B1": n})
		cmd := exec.Command(bin, "worker", "--root", root, "--server", s.URL(), "--concurrency", "256")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			b.Fatalf("worker: %v\n%s", err, out.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		peakMB = max(peakMB, float64(ru.Maxrss)/1024) // Maxrss is in KiB on Linux
	}
	b.ReportMetric(peakMB, "peak_RSS_MB")
}
