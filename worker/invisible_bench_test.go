package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/sim"
)

// loadGen is the minimal client the worker is held against: window
// goroutines send the prompts' messages in order as streamed chat requests
// (the worker's body, without its sampling and rid) and read each stream to
// its end; it returns when ctx ends, with each answer's finish time, latency
// and completion tokens.
func loadGen(ctx context.Context, url string, prompts [][]byte, window, maxTokens int) []answer {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: window, DisableCompression: true}}
	next := make(chan []byte)
	go func() {
		defer close(next)
		for _, p := range prompts {
			select {
			case next <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	var mu sync.Mutex
	var out []answer
	var wg sync.WaitGroup
	for range window {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for msgs := range next {
				body := fmt.Sprintf(`{"messages":%s,"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true}}`, msgs, maxTokens)
				start := time.Now()
				req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", bytes.NewReader([]byte(body)))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				var u struct {
					Usage struct {
						CompletionTokens int64 `json:"completion_tokens"`
					} `json:"usage"`
				}
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if l := sc.Bytes(); bytes.Contains(l, []byte(`"completion_tokens"`)) {
						_ = json.Unmarshal(bytes.TrimPrefix(l, []byte("data: ")), &u)
					}
				}
				resp.Body.Close()
				if sc.Err() == nil && ctx.Err() == nil {
					mu.Lock()
					out = append(out, answer{time.Now(), time.Since(start), u.Usage.CompletionTokens})
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return out
}

type answer struct {
	at      time.Time
	latency time.Duration
	tokens  int64
}

// invisibleShape: SHORT answers at a fixed window of 256, the server the
// bottleneck (it runs ~230 at once and queues the rest); time-scale 10 keeps
// the sim's own CPU (one SSE chunk per token) within the 2 cores.
var invisibleShape = struct {
	opts      sim.Options
	maxTokens int
	span      time.Duration
}{opts: sim.Options{Load: true, Speed: 10, ShortMean: 250}, maxTokens: 2048, span: 9 * time.Minute}

const invisibleWindow = 256

// BenchmarkWorkerInvisible: the worker binary against the load sim where
// the server is the bottleneck, next to loadGen at the same window on the
// same prompts, each on a fresh server; the last two thirds of each run
// measured. Delivered completion tokens/s (sim time) of both and their
// ratio (goal: >= 98 %), the worker's CPU per request (getrusage of the
// process over its whole run / records written), and the p99 latency of
// both in real ms, whose difference is what the worker adds.
func BenchmarkWorkerInvisible(b *testing.B) {
	sh := invisibleShape
	speed := sh.opts.Speed
	real := time.Duration(float64(sh.span) / speed)
	for b.Loop() {
		// the worker
		s := startSim(b, sh.opts)
		root := makeLoadRoot(b, "B1", 50000, 500)
		cmd := workerCmd(b, root, s.URL(), "--concurrency", fmt.Sprint(invisibleWindow), "--max-tokens", fmt.Sprint(sh.maxTokens), "--grace", "1ms")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		out := filepath.Join(root, "prepared", "B1", "raw_responses.jsonl")
		time.Sleep(real / 3)
		before, t0 := readAnswers(b, out, nil), time.Now()
		time.Sleep(real - real/3)
		after, t1 := readAnswers(b, out, before), time.Now()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
		total := len(readAnswers(b, out, nil))
		workerRate := tokensPerSimSec(after, t1.Sub(t0), speed)
		s.Close()

		// the load generator
		s = startSim(b, sh.opts)
		prompts := promptMessages(b, filepath.Join(root, "prepared", "B1", "prompts.jsonl"))
		ctx, cancel := context.WithTimeout(context.Background(), real)
		t0 = time.Now().Add(real / 3)
		var gen []answer
		for _, a := range loadGen(ctx, s.URL(), prompts, invisibleWindow, sh.maxTokens) {
			if a.at.After(t0) {
				gen = append(gen, a)
			}
		}
		cancel()
		genRate := tokensPerSimSec(gen, real-real/3, speed)
		s.Close()

		wp99, gp99 := p99(after), p99(gen)
		fmt.Printf("worker %.0f tok/s (%d answers), loadgen %.0f tok/s (%d); %.1f %%; worker CPU %.2f ms/request over %d; p99 %.0f ms vs %.0f ms\n",
			workerRate, len(after), genRate, len(gen), 100*workerRate/genRate, cpu.Seconds()*1000/float64(total), total, wp99, gp99)
		b.ReportMetric(workerRate, "worker_tok/s")
		b.ReportMetric(genRate, "loadgen_tok/s")
		b.ReportMetric(100*workerRate/genRate, "%_of_loadgen")
		b.ReportMetric(cpu.Seconds()*1000/float64(total), "worker_CPU_ms/req")
		b.ReportMetric(wp99, "worker_p99_ms")
		b.ReportMetric(gp99, "loadgen_p99_ms")
		b.ReportMetric(wp99-gp99, "added_p99_ms")
	}
}

// readAnswers reads the worker's whole records, leaving out the ids in skip;
// at is left zero (the window is the caller's).
func readAnswers(b *testing.B, path string, skip []answer) []answer {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		b.Fatal(err)
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	var out []answer
	for i, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if i < len(skip) || len(l) == 0 {
			continue // the file only grows: the first len(skip) lines are those
		}
		var r struct {
			LatencyS         float64 `json:"latency_s"`
			CompletionTokens int64   `json:"completion_tokens"`
		}
		if err := json.Unmarshal(l, &r); err != nil {
			b.Fatalf("record %d: %v", i, err)
		}
		out = append(out, answer{latency: time.Duration(r.LatencyS * float64(time.Second)), tokens: r.CompletionTokens})
	}
	return out
}

func tokensPerSimSec(as []answer, d time.Duration, speed float64) float64 {
	var n int64
	for _, a := range as {
		n += a.tokens
	}
	return float64(n) / (d.Seconds() * speed)
}

// p99 of the answers' latencies, in real milliseconds.
func p99(as []answer) float64 {
	if len(as) == 0 {
		return 0
	}
	l := make([]time.Duration, len(as))
	for i, a := range as {
		l[i] = a.latency
	}
	slices.Sort(l)
	return float64(l[len(l)*99/100].Microseconds()) / 1000
}

// promptMessages is each prompt's messages array as the file has it.
func promptMessages(b *testing.B, path string) [][]byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var p struct{ Messages json.RawMessage }
		if err := json.Unmarshal(l, &p); err != nil {
			b.Fatal(err)
		}
		out = append(out, p.Messages)
	}
	return out
}
