package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// The run history says a category's ledger and energy in status's words
// (parse.Spend), and the header the night's kWh and cost; a category no
// run tallied says nothing of them.
func TestSpendShown(t *testing.T) {
	s := running()
	g := int64(120_000)
	l := parse.TokenLedger{Generated: &g, Kept: 100_000, Truncated: 8_000, Retried: 3_000, Aborted: 1_000, Counted: 104_000}
	e := &parse.Energy{Joules: 7.2e6, Seconds: 3600, IdleJoules: 9e4, IdleSeconds: 600, GPUSeconds: 8 * 3600, Stretches: 2, Samples: 720, Records: 900}
	rate := parse.CostRate{PerKWh: 0.3, Currency: "EUR"}
	s.Categories[2].Spend = parse.NewSpend(2, l, e, rate)
	s.Spend = parse.NightSpend([]*parse.Spend{s.Categories[2].Spend}, rate)
	f := newFake()
	f.snap = s
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
	m, _ := newModel(f, 160, 40, Config{PollEvery: 2 * time.Second, Plain: true})
	if got := screen(m); !strings.Contains(got, "2 kWh 0.60 EUR") {
		t.Errorf("the header lacks the night's energy:\n%s", got)
	}
	s.Categories[2].Runs = []snapshot.RunInfo{{Run: "20261206T010000Z-4242", Config: "bf16", Tally: &parse.RunTally{Final: true, Ledger: l, Energy: e}}}
	f.snap = s
	m, _ = newModel(f, 160, 40, Config{PollEvery: 2 * time.Second, Plain: true})
	m.sel = 2
	// the box wraps long lines between its borders: read it as one text
	box := strings.Join(strings.Fields(strings.ReplaceAll(m.runsBox(200), "│", " ")), " ")
	for _, want := range []string{"kept 100k of 120k generated, 4000 retried or aborted; 2 kWh", "tokens: " + s.Categories[2].Spend.LedgerText, "energy: " + s.Categories[2].Spend.EnergyText} {
		if !strings.Contains(box, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("the run history lacks %q:\n%s", want, box)
		}
	}
	m.sel = 0
	if box := m.runsBox(200); strings.Contains(box, "energy:") {
		t.Errorf("a category with no tally speaks of energy:\n%s", box)
	}
}
