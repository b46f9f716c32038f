package pipeline

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// TestSpendFromTallyLines: each run's last tally line in runs.jsonl
// counts (a checkpoint is replaced by its run's final line), a run
// without power leaves energy to the others, tally lines are no runs of
// the history, and the night sums the categories, priced by
// pipeline.toml's [cost]. The figures are the lines' own, added by hand.
func TestSpendFromTallyLines(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, parse.ManifestPath), "[cost]\nper_gpu_hour = 2.5\ncurrency = \"USD\"\n")
	for cat, lines := range map[string][]string{
		"A": {
			`{"run":"r1","pid":1,"started_at":"2026-12-06T00:00:00Z"}`,
			runTallyLine("r1", false, 500, 400, 10, 1e5, 4800, 40), // a checkpoint: replaced below
			runTallyLine("r1", true, 1000, 900, 50, 3e5, 9600, 90),
			`{"run":"r2","pid":2,"started_at":"2026-12-06T02:00:00Z"}`,
			runTallyLine("r2", true, 2000, 1800, 100, 0, 0, 0), // no nvidia-smi in that run
		},
		"B": {runTallyLine("r2", true, 700, 600, 0, 2e5, 4800, 60)},
	} {
		dir := filepath.Join(root, "prepared", cat)
		mkdir(t, dir)
		write(t, filepath.Join(dir, "prompts.jsonl"), prompts(cat, 5))
		write(t, filepath.Join(dir, "runs.jsonl"), strings.Join(lines, "\n")+"\n")
	}
	w := localWatcher(t, root, newClock(), Options{})
	s := poll(w)
	a := catByName(t, s, "A")
	if a.Spend == nil || a.Spend.Runs != 2 || len(a.Runs) != 2 {
		t.Fatalf("A: spend %+v, %d runs in the history: want 2 tallies and 2 runs", a.Spend, len(a.Runs))
	}
	r0, r1 := a.Runs[0].Tally, a.Runs[1].Tally
	if r0 == nil || r1 == nil {
		t.Fatalf("A's runs' tallies: %+v, %+v", r0, r1)
	}
	// the figures, each a sum by hand of the lines above
	got := fmt.Sprintf("r1 %d %v, r2 energy %v; A %d = %d + %d + %d; %.0f J, %d records, %.4f J/record, %.4f USD; night %d, %.0f J, %.4f %s",
		r0.Ledger.Kept, r0.Final, r1.Energy, *a.Spend.Ledger.Generated, a.Spend.Ledger.Kept, a.Spend.Ledger.Retried, *a.Spend.Unexplained,
		a.Spend.Energy.Joules, a.Spend.Energy.Records, *a.Spend.JPerRecord, *a.Spend.Cost, *s.Spend.Ledger.Generated, s.Spend.Energy.Joules, *s.Spend.Cost, s.Spend.Currency)
	want := fmt.Sprintf("r1 900 true, r2 energy <nil>; A 3000 = 2700 + 150 + 150; 300000 J, 90 records, %.4f J/record, %.4f USD; night 3700, 500000 J, %.4f USD",
		3e5/90, 9600.0/3600*2.5, (9600.0+4800)/3600*2.5)
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if !strings.Contains(s.Spend.EnergyText, "cost 10.00 USD at 2.5/GPU-hour") {
		t.Errorf("the night's energy text: %s", s.Spend.EnergyText)
	}
}

// runTallyLine is a tally line of runs.jsonl as the worker writes it; no
// energy when joules is 0.
func runTallyLine(run string, final bool, gen, kept, retried int64, joules, gpuSec float64, records int) string {
	e := "null"
	if joules > 0 {
		e = fmt.Sprintf(`{"joules":%g,"seconds":600,"idle_joules":0,"idle_seconds":0,"gpu_seconds":%g,"stretches":1,"samples":120,"records":%d}`, joules, gpuSec, records)
	}
	return fmt.Sprintf(`{"run":%q,"pid":1,"tally":{"at":"2026-12-06T01:00:00Z","final":%v,"ledger":{"generated":%d,"generated_from":"counter","kept":%d,"truncated":0,"retried":%d,"aborted":0,"counted":%d},"energy":%s}}`,
		run, final, gen, kept, retried, kept+retried, e)
}
