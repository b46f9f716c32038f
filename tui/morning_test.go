package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// budgetCapped: B3 is 6.3M of its 10M-token budget at 4200/10000 records:
// the tokens come first, so its bar shows 63%, not 42%; B2 stopped at its
// budget; B3's records came from two server configurations.
func budgetCapped() snapshot.Snapshot {
	s := running()
	for i := range s.Categories {
		c := &s.Categories[i]
		switch i {
		case 1:
			c.Done, c.State, c.TokenBudget, c.CompletionTokens = 4100, snapshot.StateDone, 10_000_000, ip(10_012_345)
		case 2:
			c.TokenBudget, c.CompletionTokens, c.CappedBy, c.Progress = 10_000_000, ip(6_300_000), snapshot.CapTokens, 0.63
			c.Configs = []snapshot.ConfigCount{{Config: "fp8-kv", Records: 1652}, {Config: "bf16", Records: 2448}, {Config: snapshot.UnknownConfig, Records: 100}}
		}
		if c.CompletionTokens != nil && c.TokenBudget > 0 {
			c.Progress = min(1, float64(*c.CompletionTokens)/float64(c.TokenBudget))
		}
	}
	s.CompletionTokens, s.TokensPartial = 10_012_345+6_300_000, true
	return s
}

// throughputDrop: gen down to 310 tok/s against a median of 930 for 14
// minutes, with the server's queue empty.
func throughputDrop() snapshot.Snapshot {
	s := running()
	s.Server.GenThroughput, s.Server.QueueReqs, s.Server.TokenUsage = 310, 0, 0.41
	since := t0.Add(-14 * time.Minute)
	s.Baseline.Server = &snapshot.Trend{Now: 310, Median: 930, Minutes: 360, DropSince: &since,
		Cause: "the server's queue is empty (72 running): the worker is the bottleneck"}
	s.Baseline.Classes = []snapshot.Trend{{Class: "SHORT", Now: 31, Median: 96, Minutes: 360}}
	return s
}

func TestGoldenMorningViews(t *testing.T) {
	for name, snap := range map[string]snapshot.Snapshot{"budget_capped": budgetCapped(), "throughput_drop": throughputDrop()} {
		for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 50}} {
			t.Run(name+"_"+itoa(size[0])+"x"+itoa(size[1]), func(t *testing.T) {
				f := newFake()
				f.snap = snap
				f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
				m, _ := newModel(f, size[0], size[1], Config{PollEvery: 2 * time.Second, Plain: true})
				got := screen(m)
				for _, l := range strings.Split(got, "\n") {
					if w := ansi.StringWidth(l); w > size[0] {
						t.Fatalf("line wider than the screen (%d > %d): %q", w, size[0], l)
					}
				}
				if n := strings.Count(got, "\n") + 1; n > size[1] {
					t.Fatalf("%d lines on a %d-line screen", n, size[1])
				}
				switch {
				case name == "budget_capped" && size[0] >= 120 && !strings.Contains(got, "6.3M/10M tok"):
					t.Fatalf("no budget figure:\n%s", got)
				case name == "throughput_drop" && !strings.Contains(got, "DROP to 33% of median"):
					t.Fatalf("no drop alert:\n%s", got)
				}
				golden.RequireEqual(t, got)
			})
		}
	}
}

// TestThroughputDropNotifies: the drop rings once, when it becomes
// sustained, not again while it lasts.
func TestThroughputDropNotifies(t *testing.T) {
	var sent []string
	add := func(kind, cat, text string) { sent = append(sent, kind+": "+text) }
	before, drop := running(), throughputDrop()
	dropNotices(before, drop, add)
	dropNotices(drop, drop, add)
	if len(sent) != 1 || !strings.Contains(sent[0], "throughput_drop: throughput 310 tok/s, median 930: the server's queue is empty") {
		t.Fatalf("notices %q", sent)
	}
}

func TestShortTok(t *testing.T) {
	for n, want := range map[int64]string{930: "930", 12_500: "12.5k", 6_300_000: "6.3M", 10_000_000: "10M", 2_350_000_000: "2.4G"} {
		if got := shortTok(n); got != want {
			t.Errorf("shortTok(%d) = %q, want %q", n, got, want)
		}
	}
}
