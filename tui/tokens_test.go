package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// Records whose tokens are unknown (null, missing or not a count) make
// the figures say so: the header counts them, a row's cell is a lower
// bound, the run history counts them per run; none reads as 0 tokens.
func TestTokensUnknownShown(t *testing.T) {
	s := running()
	c := &s.Categories[2]
	c.CompletionTokens, c.TokensUnknown = ip(1_234_567), 37
	c.Runs = []snapshot.RunInfo{{Run: "20261129T0100-111", Config: "bf16", Records: ip(4000), Tokens: ip(1_234_567), TokensUnknown: 37}}
	s.CompletionTokens, s.TokensUnknown = 1_234_567, 37
	f := newFake()
	f.snap = s
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
	m, _ := newModel(f, 160, 40, Config{PollEvery: 2 * time.Second, Plain: true})
	got := screen(m)
	for _, want := range []string{"1.2M tok (+37 records unknown)", "≥1.2M "} {
		if !strings.Contains(got, want) {
			t.Errorf("the screen lacks %q:\n%s", want, got)
		}
	}
	m.sel = 2
	if box := m.runsBox(120); !strings.Contains(box, "4000 records, 1.2M tok (+37 records unknown)") {
		t.Errorf("the run history does not count them:\n%s", box)
	}
	if tokenCell(snapshot.Category{CompletionTokens: ip(6_300_000), TokenBudget: 10_000_000, TokensUnknown: 1}) != "≥6.3M/10M" {
		t.Error("a budget row's cell is not a lower bound")
	}
}
