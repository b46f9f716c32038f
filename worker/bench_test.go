package worker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
// hey sending the same streamed request on the same server and concurrency.
// Target: >= 50% of hey's rate. The server is never the bottleneck here:
// this is the worker's ceiling in requests per second (each answer is a
// record appended and counted, which hey does not do), about 600 times what
// a GPU server's SHORT work asks; whether the client holds a real server
// back is BenchmarkWorkerInvisible's question.
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
		// the request the worker sends: streamed, with usage; no rid (a shared
		// one would be refused as a duplicate while live, as SGLang does)
		os.WriteFile(body, []byte(`{"messages":[{"role":"user","content":"question 1"}],"max_tokens":10240,"stream":true,"stream_options":{"include_usage":true}}`), 0o644)
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

// BenchmarkResumeScan: the resume scan over a page-cached 1 GB file of the
// worker's own (sealed) 15 KB records, next to wc -l on the same file.
// Target: faster than wc -l.
func BenchmarkResumeScan(b *testing.B) {
	content := strings.Repeat("lorem ipsum dolor sit amet ", 555) // ~15 KB
	benchScan(b, func(w io.Writer, i int) int {
		line, err := encodeLine(record{
			ID: json.RawMessage(fmt.Sprintf(`"B1-%d"`, i)), Category: "B1", Run: "r", PromptTokens: 12, CompletionTokens: 3800,
			FinishReason: "stop", LatencyS: 1.5, FinishedAt: "2026-11-29T00:00:00Z", Content: &content,
		})
		if err != nil {
			b.Fatal(err)
		}
		n, _ := w.Write(line)
		return n
	})
}

// BenchmarkResumeScanPython: the same scan over 1 GB that the Python script
// wrote: json.dumps with its default separators and ensure_ascii escapes,
// another key order, no seal; every line is decoded in full.
func BenchmarkResumeScanPython(b *testing.B) {
	content := strings.Repeat(`lorem ipsum \u00e9t\u00e9 \"dolor\" sit\namet `, 333) // ~15 KB
	benchScan(b, func(w io.Writer, i int) int {
		n, _ := fmt.Fprintf(w, `{"category": "B1", "id": "\u00e9t\u00e9-%d", "run": "r", "content": "%s", "prompt_tokens": 12, "completion_tokens": 3800, "finish_reason": "stop", "latency_s": 1.5}`+"\n", i, content)
		return n
	})
}

func benchScan(b *testing.B, write func(w io.Writer, i int) int) {
	path := filepath.Join(b.TempDir(), "raw_responses.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var size int64
	lines := 0
	for ; size < 1<<30; lines++ {
		size += int64(write(w, lines))
	}
	w.Flush()
	f.Sync() // no writeback while the scans are timed
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
	var tokens int64
	for _, n := range s.Tokens {
		tokens += n
	}
	if s.Lines != lines || len(s.Tokens) != lines || tokens != int64(lines)*3800 || s.BadLines != 0 {
		b.Fatalf("scan: %d lines, %d ids, %d tokens, %d bad %v", s.Lines, len(s.Tokens), tokens, s.BadLines, s.BadExamples)
	}
	wc := 0.0
	for range 3 { // the best of three
		start := time.Now()
		out, err := exec.Command("wc", "-l", path).Output()
		if err != nil {
			b.Fatal(err)
		}
		if d := time.Since(start).Seconds(); wc == 0 || d < wc {
			wc = d
		}
		if got, _ := strconv.Atoi(strings.Fields(string(out))[0]); got != s.Lines {
			b.Fatalf("wc -l %d, scan %d", got, s.Lines)
		}
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
