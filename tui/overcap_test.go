package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// A category past its token budget (the seeds' B2: 26.6M against 10M)
// says so with the excess under the table, in status's words, at 80
// columns as at 160, and the fleet row counts it. Three hundred over
// their caps make a line each for the rows shown first, then a count.
func TestOverCapFlaggedAtEveryWidth(t *testing.T) {
	s := running()
	b2 := &s.Categories[1]
	b2.CompletionTokens, b2.TokenBudget = ip(26_600_000), 10_000_000
	b2.OverCap = parse.OverCaps(b2.Done, 0, b2.CompletionTokens, b2.TokenBudget)
	want := "▲ B2_opencodeinstruct over its token budget by 16.6M tokens (26.6M of 10M)"
	for _, w := range []int{80, 160} {
		f := newFake()
		f.snap = s
		f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
		m, _ := newModel(f, w, 40, Config{PollEvery: 2 * time.Second, Plain: true})
		scr := screen(m)
		if !strings.Contains(scr, want) {
			t.Errorf("at %d columns the screen lacks %q:\n%s", w, want, scr)
		}
		for _, l := range strings.Split(scr, "\n") {
			if ansi.StringWidth(l) > w {
				t.Errorf("at %d columns a line is %d wide: %q", w, ansi.StringWidth(l), l)
			}
		}
	}
	if a := strings.Join(alerts(s), ", "); !strings.Contains(a, "1 over cap") {
		t.Errorf("the fleet row's alerts %q do not count it", a)
	}

	var many []snapshot.Category
	for i := range 300 {
		c := snapshot.Category{Name: "C" + itoa(i), Class: "SHORT", Done: 12, Target: 10, State: snapshot.StateDone}
		c.OverCap = parse.OverCaps(c.Done, 10, nil, 0)
		many = append(many, c)
	}
	lines := overCapLines(many, many[:20])
	if len(lines) != maxOverCapLines+1 || lines[0] != "▲ C0 over max_samples by 2 records (12 of 10)" || lines[len(lines)-1] != "▲ 297 more categories over a cap" {
		t.Errorf("300 over their caps: %q", lines)
	}
	if got := overCapLines(many[:1], nil); len(got) != 1 || got[0] != "▲ 1 more category over a cap" {
		t.Errorf("one over its cap, not shown: %q", got)
	}
}

// The next stage's disk in the header, and, when it will not fit, a
// note in status's words and an alert on the fleet row.
func TestCaptureForecastShown(t *testing.T) {
	s := running()
	free := int64(1 << 40)
	s.Capture = parse.ForecastCapture(parse.Capture{HiddenSize: 4096}, 210_000_000, true, &free)
	f := newFake()
	f.snap = s
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
	m, _ := newModel(f, 160, 40, Config{PollEvery: 2 * time.Second, Plain: true})
	scr := screen(m)
	for _, want := range []string{"next stage ≥6.3 TiB (won't fit)", "⚠ hidden states for the next stage: at least 6.3 TiB"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the screen lacks %q:\n%s", want, scr)
		}
	}
	if a := strings.Join(alerts(s), ", "); !strings.Contains(a, "next stage won't fit") {
		t.Errorf("the fleet row's alerts %q", a)
	}
}
