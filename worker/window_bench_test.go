package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// benchShape is a kind of category on the load sim.
type benchShape struct {
	name      string
	opts      sim.Options // Load, Speed and the answer lengths
	maxTokens int
	span      time.Duration // sim time per run; the last two thirds are measured
}

var benchShapes = []benchShape{
	// SHORT: answers ~250 tokens, max_tokens 2048
	{name: "SHORT", opts: sim.Options{Speed: 20, ShortMean: 250}, maxTokens: 2048, span: 15 * time.Minute},
	// LONG: answers ~3,800 tokens, max_tokens 10,240
	{name: "LONG", opts: sim.Options{Speed: 120, LongMean: 3800, LongAbove: 4096}, maxTokens: 10240, span: 90 * time.Minute},
	// mixed: 30 % LONG answers in one category, max_tokens 10,240
	{name: "mixed", opts: sim.Options{Speed: 60, ShortMean: 250, LongMean: 3800, LongShare: 0.3}, maxTokens: 10240, span: 45 * time.Minute},
}

// loadResult is one run: delivered completion tokens/s (sim time), the
// server's retractions per hour, the window at the end and, for the
// adaptive window, when it settled (sim time).
type loadResult struct {
	tokPerSec, retractPerHour float64
	window, lo, hi            int // at the end; the band over the last two thirds
	settle                    time.Duration
	lag                       time.Duration // the sim's lag behind real time at the end (sim time)
}

// runLoad runs the worker against a fresh load sim for sh.span (sim time),
// with a fixed window, or the adaptive default when window is 0. fromLog
// serves no /metrics: the worker reads the server's log (the benchmark
// still reads the server's counters, through MetricsText).
func runLoad(b *testing.B, sh benchShape, window int, fromLog bool) loadResult {
	o := sh.opts
	o.Load = true
	root := makeLoadRoot(b, "B1", 20000, 500)
	if fromLog {
		f, err := os.Create(filepath.Join(root, filepath.FromSlash(parse.ServerLogPath)))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		o.NoMetrics, o.Log = true, f
	}
	s := startSim(b, o)
	counters := func() parse.ServerMetrics {
		m, err := parse.ParseMetrics(strings.NewReader(s.MetricsText()))
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	speed := o.Speed
	real := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speed) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var log syncBuffer
	defer func() {
		if p := os.Getenv("SW_BENCH_LOG"); p != "" {
			_ = os.WriteFile(p, []byte(log.String()), 0o644)
		}
	}()
	go func() {
		done <- Run(ctx, Config{
			Root: root, Server: s.URL(), Concurrency: window, MaxTokens: sh.maxTokens,
			AdaptEvery: real(DefaultAdaptEvery), Grace: time.Millisecond,
		}, &log)
	}()
	start := time.Now()
	var trace []windowSample
	var m0 parse.ServerMetrics
	var t0 time.Time
	for time.Since(start) < real(sh.span) {
		time.Sleep(100 * time.Millisecond)
		if t0.IsZero() && time.Since(start) >= real(sh.span/3) {
			m0, t0 = counters(), time.Now()
		}
		if w, why := stateWindow(root); w > 0 {
			if os.Getenv("SW_BENCH_TRACE") != "" && (len(trace) == 0 || trace[len(trace)-1].window != w) {
				m := counters()
				fmt.Printf("  %5.1f sim min: window %d %s (server running %.0f, queue %.0f)\n", time.Since(start).Minutes()*speed, w, why, m.RunningReqs.V, m.QueueReqs.V)
			}
			trace = append(trace, windowSample{time.Since(start), w})
		}
	}
	m1 := counters()
	simSecs := time.Since(t0).Seconds() * speed
	r0 := loadResult{lag: s.SchedulerLag()}
	cancel()
	if err := <-done; err != nil {
		b.Fatalf("worker: %v", err)
	}
	r := loadResult{
		lag:            r0.lag,
		tokPerSec:      (m1.GenTokens.V - m0.GenTokens.V) / simSecs,
		retractPerHour: (m1.Retracted.V - m0.Retracted.V) / simSecs * 3600,
	}
	if len(trace) > 0 {
		r.window = trace[len(trace)-1].window
		var settle time.Duration
		settle, r.lo, r.hi = settleTime(trace)
		r.settle = time.Duration(float64(settle) * speed)
	}
	return r
}

type windowSample struct {
	at     time.Duration
	window int
}

// settleTime is when the window first reached 90 % of its median over the
// last two thirds of the run (its working level); band is the 10th and 90th
// percentiles over those two thirds, how much it moves there.
func settleTime(trace []windowSample) (settle time.Duration, lo, hi int) {
	tail := trace[len(trace)/3:]
	ws := make([]int, len(tail))
	for i, s := range tail {
		ws[i] = s.window
	}
	sort.Ints(ws)
	med := float64(ws[len(ws)/2])
	lo, hi = ws[len(ws)/10], ws[len(ws)*9/10]
	for _, s := range trace {
		if float64(s.window) >= 0.9*med {
			return s.at, lo, hi
		}
	}
	return trace[len(trace)-1].at, lo, hi
}

// stateWindow is worker.json's window and reason for the first category
// (0 if unread).
func stateWindow(root string) (int, string) {
	data, err := os.ReadFile(filepath.Join(root, "run", "worker.json"))
	if err != nil {
		return 0, ""
	}
	st, err := parse.ParseWorkerState(data)
	if err != nil || len(st.Categories) == 0 {
		return 0, ""
	}
	return st.Categories[0].Window, st.Categories[0].WindowReason
}

// BenchmarkAdaptiveWindow: delivered completion tokens/s on the load sim
// (sim/engine.go) for each shape, for the fixed windows of the sweep
// and the adaptive default, one after another on fresh servers; with the
// server's retractions per hour and the adaptive window's settle time (sim
// minutes). The goal: adaptive within 5 % of the best fixed window on every
// shape. Each shape runs span of sim time at its Speed (--time-scale). The
// adaptive default runs twice: with /metrics, and with none (SGLang without
// --enable-metrics), its gauges read from the server's log.
// SW_BENCH_SHAPES (LONG,SHORT) and SW_BENCH_WINDOWS (64,128) narrow it.
func BenchmarkAdaptiveWindow(b *testing.B) {
	windows := []int{16, 32, 64, 72, 128, 150, 256, 512}
	if v := os.Getenv("SW_BENCH_WINDOWS"); v != "" {
		windows = nil
		for _, f := range strings.Split(v, ",") {
			n, _ := strconv.Atoi(f)
			windows = append(windows, n)
		}
	}
	for b.Loop() {
		for _, sh := range benchShapes {
			if v := os.Getenv("SW_BENCH_SHAPES"); v != "" && !slices.Contains(strings.Split(v, ","), sh.name) {
				continue
			}
			best, bestW := 0.0, 0
			for _, w := range windows {
				r := runLoad(b, sh, w, false)
				fmt.Printf("%-5s fixed %4d: %6.0f tok/s, %5.0f retractions/h (sim lag %.0f s)\n", sh.name, w, r.tokPerSec, r.retractPerHour, r.lag.Seconds())
				if r.tokPerSec > best {
					best, bestW = r.tokPerSec, w
				}
			}
			best = max(best, 1)
			for _, fromLog := range []bool{false, true} {
				r := runLoad(b, sh, 0, fromLog)
				name, metric := "adaptive", "%_of_best_"+sh.name
				if fromLog {
					name, metric = "adaptive, gauges from the log", "%_of_best_log_"+sh.name
				}
				fmt.Printf("%-5s %s: %6.0f tok/s, %5.0f retractions/h, window %d–%d, settled after %.1f sim min (sim lag %.0f s); %.1f %% of the best fixed (%d)\n",
					sh.name, name, r.tokPerSec, r.retractPerHour, r.lo, r.hi, r.settle.Minutes(), r.lag.Seconds(), 100*r.tokPerSec/best, bestW)
				b.ReportMetric(100*r.tokPerSec/best, metric)
			}
		}
	}
}
