package parse

import (
	"encoding/json"
	"strings"
	"testing"
)

// A hand-edited or hostile runs.jsonl: tally lines with negative, huge
// (int64's maximum twice, 1e308 joules twice) figures are dropped, so the
// Spend's figures are the good run's and --json can hold it, and its
// ledger line says how many were left out.
func TestTalliesDropImpossibleLines(t *testing.T) {
	const good = `{"run":"r1","pid":1,"tally":{"at":"2026-12-06T10:00:00Z","final":true,"ledger":{"generated":1000,"kept":800,"truncated":10,"retried":50,"aborted":20,"counted":870},"energy":{"joules":3600000,"seconds":3600,"gpu_seconds":3600,"stretches":1,"samples":700,"records":40}}}`
	hostile := []string{
		strings.NewReplacer(`"r1"`, `"r2"`, `"kept":800`, `"kept":-5000`).Replace(good),
		strings.NewReplacer(`"r1"`, `"r3"`, `"generated":1000`, `"generated":9223372036854775807`, `"joules":3600000`, `"joules":1e308`).Replace(good),
		strings.NewReplacer(`"r1"`, `"r4"`, `"generated":1000`, `"generated":9223372036854775807`, `"joules":3600000`, `"joules":1e308`).Replace(good),
		strings.NewReplacer(`"r1"`, `"r5"`, `"seconds":3600`, `"seconds":-3`).Replace(good),
	}
	var want, got Tallies
	for i, line := range append([]string{good}, hostile...) {
		r, err := ParseRunLine([]byte(line))
		if err != nil || !r.IsTally() {
			t.Fatalf("line %d: %v", i, err)
		}
		got.Note(r.Run, *r.Tally)
		if i == 0 {
			want.Note(r.Run, *r.Tally)
		}
	}
	rate := CostRate{PerKWh: 0.3}
	g, w := SpendOf(&got, rate), SpendOf(&want, rate)
	if _, err := json.Marshal(g); err != nil {
		t.Fatalf("--json cannot hold the spend: %v", err)
	}
	if g.Ignored != 4 || !strings.HasSuffix(g.LedgerText, "; 4 tally lines left out (figures no run could make)") {
		t.Errorf("the lines left out are not said: %d, %q", g.Ignored, g.LedgerText)
	}
	g.Ignored, g.LedgerText = 0, w.LedgerText
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("with hostile lines:\n%s\nwant the good run's alone:\n%s", gb, wb)
	}
}
