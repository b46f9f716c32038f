package pipeline

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// writerRoot is a root with a live fake worker on B2 (LONG, 2000 prompts,
// none done) and B3 (SHORT, 500) still to come.
func writerRoot(t *testing.T, c *clock) (root string, pid int) {
	root = t.TempDir()
	write(t, filepath.Join(root, "prepared", "B2", "prompts.jsonl"), prompts("B2", 2000))
	write(t, filepath.Join(root, "prepared", "B2", "raw_responses.jsonl"), "")
	write(t, filepath.Join(root, "prepared", "B3", "prompts.jsonl"), prompts("B3", 500))
	pid = fakeWorker(t, root)
	touch(t, filepath.Join(root, "prepared", "B2", "raw_responses.jsonl"), c.now())
	return root, pid
}

func touch(t *testing.T, p string, at time.Time) { t.Helper(); must(t, os.Chtimes(p, at, at)) }

func workerOn(t *testing.T, root string, pid int, c *clock, started time.Time) {
	writeWorkerJSON(t, root, parse.WorkerState{PID: pid, State: parse.WorkerRunning, Category: "B2", StartedAt: started,
		CategorySince: started, UpdatedAt: c.now(), Categories: []parse.CategoryState{
			{Name: "B2", Class: "LONG", Target: 2000, State: parse.CatRunning, Rate: 1}, // a witness: the view's own window gives the figure
			{Name: "B3", Class: "SHORT", Target: 500, State: parse.CatPending},
		}})
}

// TestRateFollowsWriters drives a writer with a known rate, steady and
// bursty, polled every 2 s of simulated time: after two minutes the rate
// and the ETA are within 20 % of the truth, and once the writer stops both
// go (rate 0, no ETA, stalled) within one stall_after.
func TestRateFollowsWriters(t *testing.T) {
	t.Parallel()
	for _, wr := range []struct {
		name  string
		every time.Duration // a burst every
		burst int
		truth float64 // records per minute
	}{
		{"steady 1/s", time.Second, 1, 60},
		{"bursty 50 every 20s", 20 * time.Second, 50, 150},
	} {
		t.Run(wr.name, func(t *testing.T) {
			c := newClock()
			c.t = time.Now().Truncate(time.Second)
			root, pid := writerRoot(t, c)
			start := c.now()
			workerOn(t, root, pid, c, start)
			stallAfter := 2 * time.Minute
			w := localWatcher(t, root, c, Options{StallAfter: stallAfter})
			raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
			done, next := 0, start.Add(wr.every)
			step := func() snapshot.Snapshot {
				c.advance(2 * time.Second)
				for !next.After(c.now()) {
					appendTo(t, raw, records("B2", done, wr.burst))
					done += wr.burst
					next = next.Add(wr.every)
				}
				touch(t, raw, c.now())
				workerOn(t, root, pid, c, start)
				return poll(w)
			}
			poll(w)
			var s snapshot.Snapshot
			worst := 0.0
			for c.now().Sub(start) < 2*time.Minute {
				s = step()
				if b2 := catByName(t, s, "B2"); c.now().Sub(start) >= time.Minute {
					worst = math.Max(worst, math.Abs(b2.RatePerMin-wr.truth)/wr.truth)
				}
			}
			b2 := catByName(t, s, "B2")
			rateErr := math.Abs(b2.RatePerMin-wr.truth) / wr.truth
			if b2.State != snapshot.StateRunning || rateErr > 0.2 {
				t.Fatalf("after 2 min: %s at %.1f/min, truth %.0f/min (error %.0f%%)", b2.State, b2.RatePerMin, wr.truth, rateErr*100)
			}
			truthETA := float64(2000-done) / wr.truth * 60
			if b2.ETASeconds == nil || math.Abs(*b2.ETASeconds-truthETA)/truthETA > 0.2 {
				t.Fatalf("row ETA %v, truth %.0fs", b2.ETASeconds, truthETA)
			}
			t.Logf("rate %.1f/min (truth %.0f): error %.1f%% now, worst %.1f%% over the second minute; ETA %.0fs (truth %.0fs)",
				b2.RatePerMin, wr.truth, rateErr*100, worst*100, *b2.ETASeconds, truthETA)
			// the writer stops
			stopped := c.now()
			for c.now().Sub(stopped) <= stallAfter+2*time.Second {
				c.advance(2 * time.Second)
				workerOn(t, root, pid, c, start)
				s = poll(w)
			}
			b2 = catByName(t, s, "B2")
			if b2.State != snapshot.StateStalled || b2.RatePerMin != 0 || b2.ETASeconds != nil || s.ETASeconds != nil {
				t.Fatalf("one stall_after after the writer stopped: %s %.1f/min eta %v pipeline eta %v", b2.State, b2.RatePerMin, b2.ETASeconds, s.ETASeconds)
			}
		})
	}
}

// TestFirstSightStalledPythonRoot: a Python-era root (no worker.json, a
// process holding the log) whose category stopped growing an hour ago,
// while the log still takes retry lines, is stalled on the first poll:
// with how long, no rate, no ETA.
func TestFirstSightStalledPythonRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B2", "prompts.jsonl"), prompts("B2", 1000))
	raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
	write(t, raw, records("B2", 0, 100))
	touch(t, raw, time.Now().Add(-time.Hour))
	log := filepath.Join(root, parse.WorkerLogPath)
	write(t, log, "Processing: B2 (SHORT)\nB2: 1000 prompts\nRunning 1000 requests (concurrency=16, max_tokens=2048)...\n"+
		"50/1000 (0 err) 1.0 req/s avg_comp=200tok ETA=15m\n100/1000 (0 err) 1.0 req/s avg_comp=200tok ETA=15m\n"+
		strings.Repeat("Retrying request after error: Connection refused\n", 30))
	startIn(t, root, "exec 3>>logs/inference_all.log; while :; do sleep 1; done", "python", "inference.py")
	// a fresh `synthwatch status`: a new watcher, one poll
	var s snapshot.Snapshot
	deadline := time.Now().Add(30 * time.Second)
	for {
		s = NewWatcher(localHost(), Options{Host: "local", Root: root, ServerURL: closedURL(t), StallAfter: 10 * time.Minute}, nil).Poll(context.Background())
		if snapshot.Alive(s.Worker.State) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	b2 := catByName(t, s, "B2")
	if b2.State != snapshot.StateStalled || b2.RatePerMin != 0 || b2.ETASeconds != nil || s.ETASeconds != nil {
		t.Fatalf("B2 on first sight: %s %.1f/min eta %v (pipeline %v); worker %+v", b2.State, b2.RatePerMin, b2.ETASeconds, s.ETASeconds, s.Worker)
	}
	if s.Worker.State != snapshot.WorkerStalled || !strings.Contains(s.Worker.Reason, "B2: no new records for 1h00m") {
		t.Fatalf("worker: %+v", s.Worker)
	}
}

// TestFirstSightJustSwitched: a worker that evidently just moved to a
// category whose file is old (worker.json's category_since, or a log that
// ends with the category's header) is running, not stalled.
func TestFirstSightJustSwitched(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"worker.json", "log header"} {
		t.Run(how, func(t *testing.T) {
			c := newClock()
			c.t = time.Now()
			root, pid := writerRoot(t, c)
			raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
			write(t, raw, records("B2", 0, 100))
			touch(t, raw, c.now().Add(-3*time.Hour))
			if how == "worker.json" {
				workerOn(t, root, pid, c, c.now().Add(-20*time.Second))
				st := parse.WorkerState{PID: pid, State: parse.WorkerRunning, Category: "B2", StartedAt: c.now().Add(-5 * time.Hour),
					CategorySince: c.now().Add(-20 * time.Second), UpdatedAt: c.now()}
				writeWorkerJSON(t, root, st)
			} else {
				os.Remove(filepath.Join(root, "run", "worker.json"))
				write(t, filepath.Join(root, parse.WorkerLogPath), "Processing: B1 (SHORT)\n10/10 (0 err) 1.0 req/s avg_comp=200tok ETA=0s\nProcessing: B2 (LONG)\n")
				startIn(t, root, "exec 3>>logs/inference_all.log; while :; do sleep 1; done")
			}
			var s snapshot.Snapshot
			deadline := time.Now().Add(30 * time.Second)
			for {
				s = localWatcher(t, root, c, Options{StallAfter: 10 * time.Minute}).Poll(context.Background())
				if snapshot.Alive(s.Worker.State) || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if b2 := catByName(t, s, "B2"); b2.State != snapshot.StateRunning {
				t.Fatalf("B2: %s, worker %+v", b2.State, s.Worker)
			}
			// and an hour on with no growth it is stalled
			if how == "worker.json" {
				st := parse.WorkerState{PID: pid, State: parse.WorkerRunning, Category: "B2", StartedAt: c.now().Add(-5 * time.Hour),
					CategorySince: c.now().Add(-time.Hour), UpdatedAt: c.now()}
				writeWorkerJSON(t, root, st)
				s = localWatcher(t, root, c, Options{StallAfter: 10 * time.Minute}).Poll(context.Background())
				if b2 := catByName(t, s, "B2"); b2.State != snapshot.StateStalled {
					t.Fatalf("an hour after the switch: B2 %s", b2.State)
				}
			}
		})
	}
}

// TestPipelineETAUsesEachClassRate: while LONG runs, the SHORT category to
// come is timed at SHORT's own rate (from an earlier category_done), not
// LONG's; with no SHORT rate known there is no figure.
func TestPipelineETAUsesEachClassRate(t *testing.T) {
	t.Parallel()
	for _, known := range []bool{true, false} {
		t.Run(fmt.Sprintf("short rate known %v", known), func(t *testing.T) {
			c := newClock()
			c.t = time.Now().Truncate(time.Second)
			root, pid := writerRoot(t, c)
			start := c.now()
			workerOn(t, root, pid, c, start)
			tl := timeline.New(100, "")
			if known {
				tl.Add(snapshot.Event{Time: start.Add(-time.Hour), Kind: "category_done", Category: "B1", Class: "SHORT", RatePerMin: 600, Text: "B1 done"})
			}
			w := NewWatcher(localHost(), Options{Host: "local", Root: root, Now: c.now, ServerURL: closedURL(t)}, tl)
			raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
			poll(w)
			var s snapshot.Snapshot
			for i := 1; i <= 30; i++ { // LONG at 30/min
				c.advance(2 * time.Second)
				appendTo(t, raw, records("B2", i-1, 1))
				workerOn(t, root, pid, c, start)
				s = poll(w)
			}
			b2 := catByName(t, s, "B2")
			if !known {
				// what is known: B2's own ETA, and SHORT unmeasured
				if s.ETASeconds != nil || s.ETAPart == nil || s.ETAPart.Seconds != *b2.ETASeconds || !slices.Equal(s.ETAPart.Unmeasured, []string{"SHORT"}) {
					t.Fatalf("pipeline ETA %v (%+v) with no SHORT rate known, B2's ETA %v", s.ETASeconds, s.ETAPart, *b2.ETASeconds)
				}
				if got, want := snapshot.ETAText(s), "≥"+snapshot.FormatETA(b2.ETASeconds)+" + SHORT unmeasured"; got != want {
					t.Fatalf("ETA text %q, want %q", got, want)
				}
				return
			}
			want := *b2.ETASeconds + 500.0/600*60
			if s.ETASeconds == nil || math.Abs(*s.ETASeconds-want) > 1 {
				t.Fatalf("pipeline ETA %v, want %.0f (B2 %.0fs + B3 500 at 600/min)", s.ETASeconds, want, *b2.ETASeconds)
			}
		})
	}
}

// A stall seen by two sessions (a dashboard reopened during it) is one
// stall_start, stamped when it became a stall, not when we looked.
func TestStallRecordedOnceAcrossSessions(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now().Truncate(time.Second)
	root, pid := writerRoot(t, c)
	raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
	write(t, raw, records("B2", 0, 10))
	grew := c.now().Add(-time.Hour)
	touch(t, raw, grew)
	workerOn(t, root, pid, c, c.now().Add(-2*time.Hour))
	hist := filepath.Join(t.TempDir(), "history.jsonl")
	var tl *timeline.Timeline
	for session := 0; session < 2; session++ {
		tl = timeline.New(100, hist) // each session reads the history file again
		w := NewWatcher(localHost(), Options{Host: "local", Root: root, Now: c.now, ServerURL: closedURL(t), StallAfter: 10 * time.Minute}, tl)
		poll(w)
		c.advance(5 * time.Minute)
		workerOn(t, root, pid, c, c.now().Add(-2*time.Hour))
		poll(w)
	}
	var stalls []snapshot.Event
	for _, e := range tl.Recent(100) {
		if e.Kind == "stall_start" {
			stalls = append(stalls, e)
		}
	}
	if len(stalls) != 1 || !stalls[0].Time.Equal(grew.Add(10*time.Minute).UTC()) {
		t.Fatalf("stall events %+v, want one at %s", stalls, grew.Add(10*time.Minute).UTC())
	}
}

// A new run's header ends the last run's progress line: its 33.7 req/s is
// not the new run's rate, and its 400/400 is no cross-check against the
// file the new run resumes.
func TestNewRunForgetsTheOldProgressLine(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B5", "prompts.jsonl"), prompts("B5", 400))
	raw := filepath.Join(root, "prepared", "B5", "raw_responses.jsonl")
	write(t, raw, records("B5", 0, 200))
	write(t, filepath.Join(root, parse.WorkerLogPath), "Processing: B5 (SHORT)\nB5: 400 prompts\n"+
		"400/400 (0 err) 33.7 req/s avg_comp=200tok ETA=0s\nAll categories finished.\n"+
		"Processing: B5 (SHORT)\nB5: 400 prompts, 200 resumed, 200 to go\nRunning 200 requests (concurrency=16, max_tokens=2048)...\n")
	startIn(t, root, "exec 3>>logs/inference_all.log; while :; do sleep 1; done")
	var s snapshot.Snapshot
	deadline := time.Now().Add(30 * time.Second)
	for {
		s = NewWatcher(localHost(), Options{Host: "local", Root: root, ServerURL: closedURL(t)}, nil).Poll(context.Background())
		if snapshot.Alive(s.Worker.State) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	b5 := catByName(t, s, "B5")
	if b5.State != snapshot.StateRunning || b5.RatePerMin != 0 || b5.ETASeconds != nil || len(s.Warnings) != 0 {
		t.Fatalf("B5 %s at %.1f/min, eta %v, warnings %q", b5.State, b5.RatePerMin, b5.ETASeconds, s.Warnings)
	}
}

// worker.json's extra_lines describe the file its scan read: once the file
// is rewritten (a hand dedup) they no longer apply, and DONE is the line
// count again, with a word why.
func TestRewrittenFileVoidsTheScanFigures(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, pid := writerRoot(t, c)
	raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
	write(t, raw, records("B2", 0, 100)+records("B2", 0, 34)) // 34 duplicates
	lines, extra := int64(134), int64(34)
	st := parse.WorkerState{PID: pid, State: parse.WorkerRunning, Category: "B2", StartedAt: c.now(), CategorySince: c.now(), UpdatedAt: c.now(),
		Categories: []parse.CategoryState{{Name: "B2", Class: "SHORT", Target: 2000, State: parse.CatRunning, Lines: &lines, ExtraLines: &extra}}}
	writeWorkerJSON(t, root, st)
	w := localWatcher(t, root, c, Options{})
	if b2 := catByName(t, poll(w), "B2"); b2.Done != 100 || b2.Lines != 134 {
		t.Fatalf("before: done %d lines %d", b2.Done, b2.Lines)
	}
	write(t, raw, records("B2", 0, 160)) // deduplicated by hand, and 60 more since: more lines than the scan saw
	c.advance(2 * time.Second)
	st.UpdatedAt = c.now()
	writeWorkerJSON(t, root, st)
	s := poll(w)
	b2 := catByName(t, s, "B2")
	if b2.Done != 160 || !strings.Contains(strings.Join(b2.Warnings, "\n"), "rewritten since the worker's resume scan") {
		t.Fatalf("after the rewrite: done %d lines %d warnings %q", b2.Done, b2.Lines, b2.Warnings)
	}
}
