package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// gated is the running night with a gate on every category with records:
// B1 a thinking model's, all pass but one empty answer; B2 one in five
// with no reasoning and a few over max_length, below the 90% floor; B3
// 300 of its records counted by a reader that judges none (the fallback).
func gated() snapshot.Snapshot {
	s := running()
	rules := parse.GateRules{MaxLength: 8192}
	tally := func(n int, g parse.GateFacts, length int64, into *parse.GateTally) {
		for range n {
			into.Add(g, length, true, rules.MaxLength)
		}
	}
	var b1, b2, b3 parse.GateTally
	tally(9997, parse.GateFacts{Reasoned: true}, 3000, &b1)
	tally(1, parse.GateFacts{Reasoned: true, Empty: true}, 8192, &b1)
	tally(8000, parse.GateFacts{Reasoned: true}, 4000, &b2)
	tally(1960, parse.GateFacts{}, 4000, &b2)
	tally(40, parse.GateFacts{Reasoned: true}, 9000, &b2)
	tally(3900, parse.GateFacts{Reasoned: true}, 2000, &b3)
	b3.Merge(parse.GateTally{Records: 300, Unexamined: 300, MaxLength: rules.MaxLength})
	s.Categories[0].Gate = parse.JudgeGate(b1, rules)
	s.Categories[1].Gate = parse.JudgeGate(b2, rules)
	s.Categories[2].Gate = parse.JudgeGate(b3, rules)
	return s
}

// The gate in the dashboard: the PASS column where the width has room,
// the categories below the floor under the table at 80 columns too, the
// run history pane's line in status's words, and the fleet row's alert.
func TestGoldenGate(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {100, 30}, {120, 40}} {
		t.Run("table_"+itoa(size[0])+"x"+itoa(size[1]), func(t *testing.T) {
			f := newFake()
			f.snap = gated()
			f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
			m, _ := newModel(f, size[0], size[1], Config{PollEvery: 2 * time.Second, Plain: true})
			got := screen(m)
			for _, l := range strings.Split(got, "\n") {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Fatalf("line wider than the screen (%d > %d): %q", w, size[0], l)
				}
			}
			below := "▼ " + snapshot.GateBelowText(f.snap.Categories[1].Name, *f.snap.Categories[1].Gate)
			if !strings.Contains(got, below) {
				t.Errorf("the screen lacks %q", below)
			}
			if hasPass := strings.Contains(got, " PASS "); hasPass != (size[0] >= minPassWidth) {
				t.Errorf("at %d columns the PASS column shown: %v", size[0], hasPass)
			}
			golden.RequireEqual(t, got) // testdata/TestGoldenGate/NAME.golden; -update rewrites it
		})
	}
	t.Run("pane", func(t *testing.T) {
		f := newFake()
		f.snap = gated()
		f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
		m, _ := newModel(f, 120, 40, Config{PollEvery: 2 * time.Second, Plain: true})
		m = step(m, press("j"))
		m = step(m, press("H"))
		got := screen(m)
		if want := "training gate: pass 8,000 of 10,000 (80%): 1,960 no reasoning, 40 over max_length 8,192"; !strings.Contains(got, want) {
			t.Errorf("the run history lacks %q:\n%s", want, got)
		}
		golden.RequireEqual(t, got)
	})
	if a := strings.Join(alerts(gated()), ", "); !strings.Contains(a, "1 below pass floor") {
		t.Errorf("the fleet row's alerts %q", a)
	}
}
