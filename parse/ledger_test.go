package parse

import (
	"strings"
	"testing"
	"time"
)

func TestCounterSpanRestart(t *testing.T) {
	var c CounterSpan
	for _, v := range []float64{1000, 1500, 2500, 300, 900} { // the server restarted after 2500
		c.Read(v)
	}
	if c.Increase != 1500+900 || c.Resets != 1 {
		t.Errorf("increase %v, resets %d; want 2400, 1", c.Increase, c.Resets)
	}
}

func TestLedgerArithmetic(t *testing.T) {
	g := int64(10_000)
	alone := TokenLedger{Generated: &g, Kept: 9_000, Truncated: 1_000, Retried: 700, Aborted: 250, Counted: 9_950}
	if u, ok := alone.Unexplained(); !ok || u != 50 || !alone.Alone() {
		t.Errorf("alone: unexplained %d %v, alone %v", u, ok, alone.Alone())
	}
	if !strings.Contains(alone.Text(), "for this job") || !strings.Contains(alone.Text(), "unexplained 50") {
		t.Errorf("text: %s", alone.Text())
	}
	g2 := int64(30_000)
	shared := TokenLedger{Generated: &g2, Kept: 9_000, Counted: 9_000}
	if shared.Alone() || !strings.Contains(shared.Text(), "other clients too") {
		t.Errorf("shared: %s", shared.Text())
	}
	none := TokenLedger{Kept: 500, Uncounted: 1}
	if _, ok := none.Unexplained(); ok || !strings.Contains(none.Text(), "generated ?") {
		t.Errorf("no counter: %s", none.Text())
	}
	sum := alone.Add(none)
	if u, _ := sum.Unexplained(); u != 50 || sum.Kept != 9_500 || sum.Uncounted != 1 {
		t.Errorf("sum: %+v (unexplained %d): the uncounted run's tokens must not eat into the rest", sum, u)
	}
	if sum.Wasted() != 1_950 {
		t.Errorf("wasted %d", sum.Wasted())
	}
}

func TestRunTallyBrief(t *testing.T) {
	g := int64(51_400)
	rt := RunTally{Ledger: TokenLedger{Generated: &g, Kept: 49_900, Retried: 1_200, Aborted: 300}, Energy: &Energy{Joules: 921_600, Samples: 30}}
	if got := rt.Brief(); got != "kept 49.9k of 51.4k generated, 1500 retried or aborted; 0.256 kWh (so far)" {
		t.Errorf("Brief = %q", got)
	}
	rt.Final, rt.Energy = true, nil
	if got := rt.Brief(); got != "kept 49.9k of 51.4k generated, 1500 retried or aborted; energy not measured" {
		t.Errorf("Brief = %q", got)
	}
}

func TestTalliesKeepEachRunsLast(t *testing.T) {
	var ts Tallies
	ts.Note("a", RunTally{Ledger: TokenLedger{Kept: 10}, Energy: &Energy{Joules: 5, Samples: 2}})
	ts.Note("a", RunTally{Ledger: TokenLedger{Kept: 30}, Energy: &Energy{Joules: 9, Samples: 3}, Final: true})
	ts.Note("b", RunTally{Ledger: TokenLedger{Kept: 7}})
	l, e := ts.Sum()
	if l.Kept != 37 || e == nil || e.Joules != 9 || ts.Runs() != 2 {
		t.Errorf("sum %+v %+v", l, e)
	}
	for i := 0; i < MaxTallyRuns+50; i++ {
		ts.Note(string(rune('A'+i%26))+Thousands(int64(i)), RunTally{Ledger: TokenLedger{Kept: 1}})
	}
	if l, _ := ts.Sum(); l.Kept != 37+MaxTallyRuns+50 || len(ts.order) > MaxTallyRuns+1 {
		t.Errorf("overflow: kept %d, %d runs kept apart", l.Kept, len(ts.order))
	}
}

// Three decode lines of one rank a minute apart, another rank's two: the
// tokens are each line's throughput times the time since its rank's last
// line; the first line of a rank and one after a restart's gap add none.
func TestLoggedGeneration(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	var g LoggedGeneration
	g.Add("dp0", t0, 999) // its first line: the time before it is unknown
	g.Add("dp0", t0.Add(time.Minute), 100)
	g.Add("dp1", t0.Add(30*time.Second), 50)
	g.Add("dp0", t0.Add(2*time.Minute), 200)
	g.Add("dp1", t0.Add(90*time.Second), 40)
	g.Add("dp0", t0.Add(2*time.Minute+MaxLoggedGap+time.Second), 300) // after a restart's gap
	if want := 100*60.0 + 200*60 + 40*60; g.Tokens != want || g.Lines != 3 {
		t.Errorf("tokens %v over %d lines, want %v over 3", g.Tokens, g.Lines, want)
	}
	gen := int64(g.Tokens)
	l := TokenLedger{Generated: &gen, GeneratedFrom: GenFromLog, Kept: 20_000, Counted: 20_000}
	if !strings.Contains(l.Text(), "throughput integrated, an estimate") {
		t.Errorf("a log's figure reads as a counter's: %s", l.Text())
	}
	if s := l.Add(TokenLedger{GeneratedFrom: GenFromCounter}); s.GeneratedFrom != "counter+log" {
		t.Errorf("mixed sources: %q", s.GeneratedFrom)
	}
}
