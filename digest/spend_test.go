package digest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/parse"
)

// The report's wasted tokens and energy are the runs' last tally lines,
// read as status reads them (parse.Tallies → parse.SpendOf with
// pipeline.toml's [cost]): a night with tally lines appended to a
// category's runs.jsonl says what those lines add up to, and a tally line
// is no run of its own.
func TestDigestSpendFromTallyLines(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	digesttest.Night(t, root, now, digesttest.Options{})
	cats, _ := filepath.Glob(filepath.Join(root, "prepared", "*"))
	if len(cats) == 0 {
		t.Fatal("the night has no category")
	}
	cat := filepath.Base(cats[0])
	before, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if before.Spend != nil {
		t.Fatalf("a night with no tally line has a spend: %+v", before.Spend)
	}
	g1, g2 := int64(5000), int64(800)
	lines := []parse.RunTally{
		{At: "a", Ledger: parse.TokenLedger{Generated: &g1, Kept: 100, Counted: 100}}, // a checkpoint
		{At: "b", Final: true, Ledger: parse.TokenLedger{Generated: &g1, Kept: 4000, Truncated: 300, Retried: 200, Counted: 4200}, Energy: &parse.Energy{Joules: 7.2e6, Seconds: 3600, GPUSeconds: 28800, Stretches: 1, Samples: 720, Records: 40}},
		{At: "c", Final: true, Ledger: parse.TokenLedger{Generated: &g2, Kept: 700, Aborted: 50, Counted: 750}},
	}
	var ts parse.Tallies
	for i, l := range lines {
		run := []string{"t1", "t1", "t2"}[i]
		b, _ := json.Marshal(parse.RunLine{Run: run, PID: 7, Tally: &l})
		f, err := os.OpenFile(filepath.Join(root, "prepared", cat, parse.RunsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(append(b, '\n'))
		f.Close()
		ts.Note(run, l)
	}
	if err := os.WriteFile(filepath.Join(root, parse.ManifestPath), append(mustRead(t, filepath.Join(root, parse.ManifestPath)), "\n[cost]\nper_kwh = 0.25\ncurrency = \"EUR\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want := parse.SpendOf(&ts, parse.CostRate{PerKWh: 0.25, Currency: "EUR"})
	for _, c := range s.Categories {
		if c.Name != cat {
			continue
		}
		if c.Spend == nil || c.Spend.LedgerText != want.LedgerText || c.Spend.EnergyText != want.EnergyText || *c.Spend.Cost != 0.5 {
			t.Errorf("%s: %+v, want %+v", cat, c.Spend, want)
		}
	}
	if s.Spend == nil || s.Spend.LedgerText != want.LedgerText || len(s.Runs) != len(before.Runs) {
		t.Errorf("the night: %+v (%d runs, %d before)", s.Spend, len(s.Runs), len(before.Runs))
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return b
}
