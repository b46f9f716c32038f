package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

func run(key, kv string) parse.RunLine {
	return parse.RunLine{Run: key, Snapshot: parse.ServerSnapshot{ConfigKey: key, Info: map[string]any{"kv_cache_dtype": kv}}}
}

// TestThroughputDropNamesTheCause runs an hour at 930 tok/s, then a drop
// to 300 with each cause the poll can see; the drop is an event only once
// it has lasted 10 minutes, and it names the cause.
func TestThroughputDropNamesTheCause(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, want string
		during     func(runs *[]parse.RunLine, s *snapshot.Snapshot, retr *int)
	}{
		{"queue empty", "worker is the bottleneck", func(_ *[]parse.RunLine, s *snapshot.Snapshot, _ *int) { s.Server.QueueReqs = 0 }},
		{"kv saturated", "KV cache saturated (98% used)", func(_ *[]parse.RunLine, s *snapshot.Snapshot, _ *int) { s.Server.TokenUsage = 0.98 }},
		{"retractions", "retractions rising", func(_ *[]parse.RunLine, s *snapshot.Snapshot, retr *int) { *retr++ }},
		{"restarted", "different arguments (fp8-kv now, bf16 before)", func(runs *[]parse.RunLine, s *snapshot.Snapshot, _ *int) {
			if len(*runs) == 1 {
				*runs = append(*runs, run("k2", "fp8_e4m3"))
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			w := NewWatcher(localHost(), Options{Root: t.TempDir(), Now: c.now}, nil)
			runs := []parse.RunLine{run("k1", "bfloat16")} // B1's runs.jsonl, as the counts read it
			snap := func(gen float64) *snapshot.Snapshot {
				return &snapshot.Snapshot{Worker: snapshot.Worker{State: snapshot.WorkerRunning, Category: "B1"},
					Server: snapshot.Server{Source: "metrics", GenThroughput: gen, QueueReqs: 12, RunningReqs: 150, TokenUsage: 0.6}}
			}
			for i := 0; i < 60; i++ {
				s := snap(930)
				w.base.Fold(s, c.now(), runs, w.sv.Retractions())
				c.advance(time.Minute)
			}
			var s *snapshot.Snapshot
			retr := 0 // the server log's retractions since (its part counts them)
			for i := 0; i <= 12; i++ {
				s = snap(300)
				tc.during(&runs, s, &retr)
				w.base.Fold(s, c.now(), runs, w.sv.Retractions()+retr)
				drops := kinds(w.timeline.Recent(50), "throughput_drop")
				if i < 10 && len(drops) > 0 {
					t.Fatalf("a drop of %d min is already an event: %+v", i, drops)
				}
				c.advance(time.Minute)
			}
			drops := kinds(w.timeline.Recent(50), "throughput_drop")
			if len(drops) != 1 || !strings.Contains(drops[0].Text, tc.want) {
				t.Fatalf("want one throughput_drop naming %q, got %+v", tc.want, drops)
			}
			if tr := s.Baseline.Server; tr == nil || tr.Median != 930 || tr.DropSince == nil || !strings.Contains(tr.Cause, tc.want) {
				t.Fatalf("baseline %+v", tr)
			}
			for i := 0; i < 3; i++ { // recovery ends it
				w.base.Fold(snap(900), c.now(), runs, w.sv.Retractions())
				c.advance(time.Minute)
			}
			if len(kinds(w.timeline.Recent(50), "throughput_recovered")) != 1 {
				t.Fatalf("no recovery event: %+v", w.timeline.Recent(50))
			}
		})
	}
}

// TestNoDropWhileTheWorkerIsStopped: a stopped worker's quiet server is
// no drop, and idle minutes do not pull the median down.
func TestNoDropWhileTheWorkerIsStopped(t *testing.T) {
	t.Parallel()
	c := newClock()
	w := NewWatcher(localHost(), Options{Root: t.TempDir(), Now: c.now}, nil)
	for i := 0; i < 120; i++ {
		st, gen := snapshot.WorkerRunning, 930.0
		if i >= 60 {
			st, gen = snapshot.WorkerStopped, 0
		}
		s := &snapshot.Snapshot{Worker: snapshot.Worker{State: st}, Server: snapshot.Server{Source: "metrics", GenThroughput: gen}}
		w.base.Fold(s, c.now(), nil, w.sv.Retractions())
		c.advance(time.Minute)
		if i == 119 && (s.Baseline.Server == nil || s.Baseline.Server.Median != 930 || s.Baseline.Server.DropSince != nil) {
			t.Fatalf("baseline %+v", s.Baseline.Server)
		}
	}
	if d := kinds(w.timeline.Recent(50), "throughput_drop"); len(d) != 0 {
		t.Fatalf("drops %+v", d)
	}
}

func kinds(evs []snapshot.Event, kind string) []snapshot.Event {
	var out []snapshot.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}
