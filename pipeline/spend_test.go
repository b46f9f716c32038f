package pipeline

import (
	"fmt"
	"math"
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
	tally := func(run string, final bool, gen, kept, retried int64, joules, gpuSec float64, records int) string {
		e := "null"
		if joules > 0 {
			e = fmt.Sprintf(`{"joules":%g,"seconds":600,"idle_joules":0,"idle_seconds":0,"gpu_seconds":%g,"stretches":1,"samples":120,"records":%d}`, joules, gpuSec, records)
		}
		return fmt.Sprintf(`{"run":%q,"pid":1,"tally":{"at":"2026-12-06T01:00:00Z","final":%v,"ledger":{"generated":%d,"generated_from":"counter","kept":%d,"truncated":0,"retried":%d,"aborted":0,"counted":%d},"energy":%s}}`,
			run, final, gen, kept, retried, kept+retried, e)
	}
	for cat, lines := range map[string][]string{
		"A": {
			`{"run":"r1","pid":1,"started_at":"2026-12-06T00:00:00Z"}`,
			tally("r1", false, 500, 400, 10, 1e5, 4800, 40), // a checkpoint: replaced below
			tally("r1", true, 1000, 900, 50, 3e5, 9600, 90),
			`{"run":"r2","pid":2,"started_at":"2026-12-06T02:00:00Z"}`,
			tally("r2", true, 2000, 1800, 100, 0, 0, 0), // no nvidia-smi in that run
		},
		"B": {tally("r2", true, 700, 600, 0, 2e5, 4800, 60)},
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
	if r := a.Runs; r[0].Tally == nil || r[0].Tally.Ledger.Kept != 900 || !r[0].Tally.Final || r[1].Tally == nil || r[1].Tally.Energy != nil {
		t.Errorf("A's runs' tallies: %+v, %+v: want r1's final line, r2's with no energy", r[0].Tally, r[1].Tally)
	}
	if l := a.Spend.Ledger; *l.Generated != 3000 || l.Kept != 2700 || l.Retried != 150 || *a.Spend.Unexplained != 150 {
		t.Errorf("A's ledger %+v, unexplained %d: want 3000 = 2700 + 150 + 150", l, *a.Spend.Unexplained)
	}
	if e := a.Spend.Energy; e.Joules != 3e5 || e.Records != 90 || !spendNear(*a.Spend.JPerRecord, 3e5/90) || !spendNear(*a.Spend.Cost, 9600.0/3600*2.5) {
		t.Errorf("A's energy %+v, cost %v: want r1's final line's, at 2.5 USD a GPU-hour", e, *a.Spend.Cost)
	}
	n := s.Spend
	if n == nil || *n.Ledger.Generated != 3700 || n.Energy.Joules != 5e5 || !spendNear(*n.Cost, (9600.0+4800)/3600*2.5) || n.Currency != "USD" {
		t.Errorf("the night: %+v", n)
	}
	if !strings.Contains(n.EnergyText, "cost 10.00 USD at 2.5/GPU-hour") {
		t.Errorf("the night's energy text: %s", n.EnergyText)
	}
}

func spendNear(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
