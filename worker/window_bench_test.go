package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// benchShape is a server of the load family (sim.Shapes) as the sweep runs
// it: the time scale, the steady span measured (sim minutes from the start
// of the category), and the fixed windows it compares, around the best
// fixed window the model gives in virtual time (sim's
// TestShapesBestWindows). The adaptive default is told none of it.
type benchShape struct {
	sim.Shape
	speed            float64
	steady0, steady1 time.Duration // sim time
	fixed            []int
	prompts          int
}

var benchShapes = []benchShape{
	{Shape: shape("small-pool-long"), speed: 60, steady0: 8 * time.Minute, steady1: 24 * time.Minute, fixed: []int{16, 32, 64}, prompts: 3000},
	{Shape: shape("night-long"), speed: 60, steady0: 8 * time.Minute, steady1: 24 * time.Minute, fixed: []int{48, 96, 192}, prompts: 5000},
	{Shape: shape("night-mixed"), speed: 40, steady0: 6 * time.Minute, steady1: 16 * time.Minute, fixed: []int{64, 128, 256}, prompts: 12000},
	{Shape: shape("night-short"), speed: 10, steady0: 4 * time.Minute, steady1: 10 * time.Minute, fixed: []int{128, 256, 512}, prompts: 12000},
	{Shape: shape("capped-short"), speed: 10, steady0: 4 * time.Minute, steady1: 8 * time.Minute, fixed: []int{96, 128, 256}, prompts: 20000},
	{Shape: shape("prefill-heavy"), speed: 20, steady0: 4 * time.Minute, steady1: 10 * time.Minute, fixed: []int{64, 128, 256}, prompts: 6000},
	{Shape: shape("big-pool-short"), speed: 10, steady0: 4 * time.Minute, steady1: 8 * time.Minute, fixed: []int{512, 1024, 1536}, prompts: 30000},
}

func shape(name string) sim.Shape {
	s, ok := sim.ShapeByName(name)
	if !ok {
		panic("no sim shape " + name)
	}
	return s
}

// firstSpan is the ramp the issue measures: the first 2 minutes of a category.
const firstSpan = 2 * time.Minute

// loadResult is one run: delivered completion tokens/s (sim time) over the
// first 2 minutes and over the steady span, the server's retractions per
// hour in the steady span, and for the adaptive window its band and when
// it settled (sim time).
type loadResult struct {
	first, steady, retractPerHour float64
	lo, hi                        int
	settle                        time.Duration
	lag                           time.Duration // the sim's largest lag behind real time (sim time)
}

// runLoad runs the worker against a fresh load sim of sh until steady1
// (sim time), with a fixed window, or the adaptive default when window is
// 0 (capped at --max-concurrency's default). fromLog serves no /metrics:
// the worker reads the server's log.
func runLoad(b *testing.B, sh benchShape, window int, fromLog bool) loadResult {
	o := sh.Opts
	o.Load, o.Speed = true, sh.speed
	root := makeLoadRoot(b, "B1", sh.prompts, sh.PromptTokens)
	if fromLog {
		f, err := os.Create(filepath.Join(root, filepath.FromSlash(parse.ServerLogPath)))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		o.NoMetrics, o.Log = true, f
	}
	s := startSim(b, o)
	// tokens generated, answers finished or not: LONG answers take
	// minutes, so finished ones would say little of the first two
	gen := func() (float64, float64) {
		m, err := parse.ParseMetrics(strings.NewReader(s.MetricsText()))
		if err != nil {
			b.Fatal(err)
		}
		return float64(s.DecodedTokens()), m.Retracted.V
	}
	real := func(d time.Duration) time.Duration { return time.Duration(float64(d) / sh.speed) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var log syncBuffer
	defer func() {
		if p := os.Getenv("SW_BENCH_LOG"); p != "" {
			_ = os.WriteFile(p, []byte(log.String()), 0o644)
		}
	}()
	start := time.Now()
	go func() {
		done <- Run(ctx, Config{
			Root: root, Server: s.URL(), Concurrency: window, MaxTokens: sh.MaxTokens,
			AdaptEvery: real(DefaultAdaptEvery), Grace: time.Millisecond,
		}, &log)
	}()
	var trace []windowSample
	var marks [3]struct{ gen, retracted float64 }
	var at [3]time.Duration
	next := 0
	for _, stop := range []time.Duration{firstSpan, sh.steady0, sh.steady1} {
		for time.Since(start) < real(stop) {
			time.Sleep(20 * time.Millisecond)
			if w, why := stateWindow(root); w > 0 {
				if os.Getenv("SW_BENCH_TRACE") != "" && (len(trace) == 0 || trace[len(trace)-1].window != w) {
					fmt.Printf("  %5.1f sim min: window %d %s\n", time.Since(start).Minutes()*sh.speed, w, why)
				}
				trace = append(trace, windowSample{time.Duration(float64(time.Since(start)) * sh.speed), w})
			}
		}
		marks[next].gen, marks[next].retracted = gen()
		at[next] = time.Duration(float64(time.Since(start)) * sh.speed)
		next++
	}
	r := loadResult{lag: s.SchedulerMaxLag()}
	cancel()
	if err := <-done; err != nil {
		b.Fatalf("worker: %v", err)
	}
	r.first = marks[0].gen / at[0].Seconds()
	span := (at[2] - at[1]).Seconds()
	r.steady = (marks[2].gen - marks[1].gen) / span
	r.retractPerHour = (marks[2].retracted - marks[1].retracted) / span * 3600
	if len(trace) > 0 {
		r.settle, r.lo, r.hi = settleTime(trace, sh.steady0)
	}
	return r
}

type windowSample struct {
	at     time.Duration
	window int
}

// settleTime is when the window first reached 90 % of its median over the
// steady span (its working level); lo and hi are the 10th and 90th
// percentiles there, how much it moves.
func settleTime(trace []windowSample, steady0 time.Duration) (settle time.Duration, lo, hi int) {
	var ws []int
	for _, s := range trace {
		if s.at >= steady0 {
			ws = append(ws, s.window)
		}
	}
	if len(ws) == 0 {
		return 0, 0, 0
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

// BenchmarkAdaptiveWindow is the sweep: on every server of the load family
// (sim.Shapes, best fixed windows from ~24 to ~1,024), delivered completion
// tokens/s over the first 2 minutes of a category and over its steady
// state, for three fixed windows around the best and for the adaptive
// default (not told the shape), each on a fresh server; with the
// adaptive window's settle time and band. The goal: the default at least
// 0.95× the best fixed window in both spans on every server.
// SW_BENCH_SHAPES (night-long,night-short) narrows it; SW_BENCH_LOG_GAUGES=1
// runs the default a second time with no /metrics (gauges from the log);
// SW_BENCH_NO_FIXED=1 runs the default alone.
func BenchmarkAdaptiveWindow(b *testing.B) {
	for b.Loop() {
		for _, sh := range benchShapes {
			if v := os.Getenv("SW_BENCH_SHAPES"); v != "" && !slices.Contains(strings.Split(v, ","), sh.Name) {
				continue
			}
			bestFirst, bestSteady, bfW, bsW := 0.0, 0.0, 0, 0
			fixed := sh.fixed
			if os.Getenv("SW_BENCH_NO_FIXED") != "" { // tuning the default only
				fixed = nil
			}
			for _, w := range fixed {
				r := runLoad(b, sh, w, false)
				fmt.Printf("%-15s fixed %4d: first 2 min %6.0f tok/s, steady %6.0f tok/s, %5.0f retractions/h (sim max lag %.1f s)\n", sh.Name, w, r.first, r.steady, r.retractPerHour, r.lag.Seconds())
				if r.first > bestFirst {
					bestFirst, bfW = r.first, w
				}
				if r.steady > bestSteady {
					bestSteady, bsW = r.steady, w
				}
			}
			modes := []bool{false}
			if os.Getenv("SW_BENCH_LOG_GAUGES") != "" {
				modes = append(modes, true)
			}
			for _, fromLog := range modes {
				r := runLoad(b, sh, 0, fromLog)
				name, metric := "default", sh.Name
				if fromLog {
					name, metric = "default, log gauges", sh.Name+"_log"
				}
				fmt.Printf("%-15s %s: first 2 min %6.0f tok/s (%.2f× fixed %d), steady %6.0f tok/s (%.2f× fixed %d), %5.0f retractions/h, window %d–%d, settled after %.1f sim min (sim max lag %.1f s)\n",
					sh.Name, name, r.first, r.first/max(bestFirst, 1), bfW, r.steady, r.steady/max(bestSteady, 1), bsW, r.retractPerHour, r.lo, r.hi, r.settle.Minutes(), r.lag.Seconds())
				b.ReportMetric(r.first/max(bestFirst, 1), "first2min_x_best_"+metric)
				b.ReportMetric(r.steady/max(bestSteady, 1), "steady_x_best_"+metric)
			}
		}
	}
}
