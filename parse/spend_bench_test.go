package parse

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// BenchmarkPowerIntegrator is one power sample integrated: the worker's
// cost each --power-every, in constant memory.
func BenchmarkPowerIntegrator(b *testing.B) {
	p := PowerIntegrator{MaxGap: 15 * time.Second}
	t0 := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Add(PowerSample{At: t0.Add(time.Duration(i) * 5 * time.Second), Watts: float64(300 + i%200), GPUs: 8, Busy: i%7 != 0})
	}
}

// BenchmarkTallyLine is one runs.jsonl tally line read and kept, and the
// category's Spend made again: what a full poll pays per new tally line.
func BenchmarkTallyLine(b *testing.B) {
	g := int64(26_500_000)
	t := RunTally{At: "2026-12-06T03:00:00Z", Ledger: TokenLedger{Generated: &g, Kept: 25_000_000, Truncated: 900_000, Retried: 300_000, Aborted: 40_000, Counted: 25_340_000},
		Energy: &Energy{Joules: 9e7, Seconds: 3 * 3600, IdleJoules: 1e6, IdleSeconds: 900, GPUSeconds: 8 * 3 * 3600, Stretches: 2, Samples: 2160, Records: 7000}}
	line, _ := json.Marshal(RunLine{Run: "20261206T010000Z-4242", PID: 4242, Tally: &t})
	var ts Tallies
	for i := 0; i < 40; i++ { // a night's runs on a category
		ts.Note(fmt.Sprint("run", i), t)
	}
	rate := CostRate{PerKWh: 0.3, Currency: "EUR"}
	b.ReportAllocs()
	for b.Loop() {
		r, err := ParseRunLine(line)
		if err != nil || !r.IsTally() {
			b.Fatal(err)
		}
		ts.Note(r.Run, *r.Tally)
		if SpendOf(&ts, rate) == nil {
			b.Fatal("no spend")
		}
	}
}
