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
		appendLine(t, filepath.Join(root, "prepared", cat, parse.RunsFile), parse.RunLine{Run: run, PID: 7, Tally: &l})
		ts.Note(run, l)
	}
	manifest := filepath.Join(root, parse.ManifestPath)
	if err := os.WriteFile(manifest, append(mustRead(t, manifest), "\n[cost]\nper_kwh = 0.25\ncurrency = \"EUR\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want := parse.SpendOf(&ts, parse.CostRate{PerKWh: 0.25, Currency: "EUR"})
	for _, c := range s.Categories {
		if got, w := jsonOf(c.Spend), jsonOf(want); c.Name == cat && got != w {
			t.Errorf("%s: %s, want %s", cat, got, w)
		}
	}
	if s.Spend == nil || s.Spend.LedgerText != want.LedgerText || len(s.Runs) != len(before.Runs) {
		t.Errorf("the night: %+v (%d runs, %d before)", s.Spend, len(s.Runs), len(before.Runs))
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// appendLine appends v as a JSON line to path.
func appendLine(t *testing.T, path string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
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
