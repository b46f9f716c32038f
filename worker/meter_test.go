package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// fakeSMI is an nvidia-smi that answers the power query as the real one
// does (`nvidia-smi --query-gpu=timestamp,index,uuid,power.draw
// --format=csv,noheader,nounits`: one "timestamp, index, uuid, watts" line a GPU;
// NVIDIA's nvidia-smi(1), --help-query-gpu) with a draw that changes
// every call, and logs each answer with its time for the check. It is put
// first on PATH; it returns the log's path.
func fakeSMI(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("date"); err != nil {
		t.Fatal("no date(1)")
	}
	dir := t.TempDir()
	script := `#!/bin/sh
[ "$1" = "--query-gpu=timestamp,index,uuid,power.draw" ] && [ "$2" = "--format=csv,noheader,nounits" ] || { echo "unexpected: $*" >&2; exit 2; }
d=$(dirname "$0")
n=$(cat "$d/n" 2>/dev/null || echo 0); n=$((n+1)); echo "$n" >"$d/n"
w0=$((100 + (n*37) % 300)); w1=$((60 + (n*11) % 90))
ts=$(date +"%Y/%m/%d %H:%M:%S.%3N")
echo "$ts|$w0.25|$w1.50" >>"$d/samples"
printf '%s, 0, GPU-5c6e0d3a-1f2b-4c3d-8e9f-0a1b2c3d4e5f, %s.25\n%s, 1, GPU-6d7f1e4b-2a3c-4d5e-9f0a-1b2c3d4e5f60, %s.50\n' "$ts" "$w0" "$ts" "$w1"
`
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return filepath.Join(dir, "samples")
}

// pyEnergy integrates the fake's own log of what it printed, by
// scripts/energy.py.
func pyEnergy(t *testing.T, samples string, maxGap time.Duration) map[string]float64 {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is needed to check the integral under CI")
		}
		t.Skip("no python3")
	}
	data, err := os.ReadFile(samples)
	if err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	for _, ln := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(ln, "|")
		w0, _ := strconv.ParseFloat(f[1], 64)
		w1, _ := strconv.ParseFloat(f[2], 64)
		fmt.Fprintf(&in, `{"ts": %q, "watts": %f, "gpus": 2, "busy": true}`+"\n", f[0], w0+w1)
	}
	cmd := exec.Command(py, "../scripts/energy.py", fmt.Sprint(maxGap.Seconds()))
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	m["samples"] = float64(strings.Count(string(data), "\n"))
	return m
}

// lastTallies is each run's last tally line in cat's runs.jsonl.
func lastTallies(t *testing.T, root, cat string) (map[string]parse.RunTally, *parse.Tallies) {
	t.Helper()
	by := map[string]parse.RunTally{}
	var ts parse.Tallies
	for _, l := range allRunLines(t, root, cat) {
		if l.IsTally() {
			by[l.Run] = *l.Tally
			ts.Note(l.Run, *l.Tally)
		}
	}
	return by, &ts
}

// pyRecordTokens sums the records' completion tokens, and those of
// records that ended at max_tokens, with Python's json module.
func pyRecordTokens(t *testing.T, root, cat string) (kept, truncated int64) {
	t.Helper()
	prog := `import json,sys
k=tr=0
for ln in open(sys.argv[1]):
    r=json.loads(ln)
    n=(r.get("usage") or {}).get("completion_tokens") or r.get("completion_tokens") or 0
    k+=n
    if r.get("finish_reason")=="length": tr+=n
print(k, tr)`
	out, err := exec.Command("python3", "-c", prog, filepath.Join(root, "prepared", cat, parse.RawFile)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(string(out), &kept, &truncated); err != nil {
		t.Fatal(err)
	}
	return kept, truncated
}

const testPowerEvery = 150 * time.Millisecond

// checkLedger holds the ledger's kept and truncated tokens to Python's
// count of the records (some truncated, not all), and its generated
// tokens to the sim's counter.
func checkLedger(t *testing.T, l parse.TokenLedger, root string, gen parse.Opt[float64]) {
	t.Helper()
	kept, trunc := pyRecordTokens(t, root, "A")
	if l.Kept != kept || l.Truncated != trunc || trunc == 0 || trunc == kept {
		t.Errorf("kept %d (truncated %d), Python counts %d (%d)", l.Kept, l.Truncated, kept, trunc)
	}
	if l.Generated == nil || !gen.OK || *l.Generated != int64(gen.V) {
		t.Fatalf("the sim's counter says %v: %s", gen, l.Text())
	}
}

// checkEnergy holds the worker's integral to Python's of the fake's
// samples: both time a sample by the query's timestamp the fake printed.
func checkEnergy(t *testing.T, e *parse.Energy, py map[string]float64) {
	t.Helper()
	if float64(e.Samples) != py["samples"] || e.Stretches != int(py["stretches"]) {
		t.Errorf("samples %d, stretches %d; the fake printed %v in %v", e.Samples, e.Stretches, py["samples"], py["stretches"])
	}
	if math.Abs(e.Joules-py["joules"]) > 1e-6*py["joules"] || math.Abs(e.Seconds-py["seconds"]) > 1e-6*py["seconds"] || e.Joules == 0 {
		t.Errorf("energy %.1f J over %.2f s; Python integrates the fake's samples to %.1f J over %.2f s", e.Joules, e.Seconds, py["joules"], py["seconds"])
	}
}

// A run with stream errors: its tally's energy is the fake's samples
// integrated (checked against Python's), and its ledger sets the sim's
// counter against the records' tokens (Python's count) and the tokens of
// the attempts that failed and were sent again.
func TestMeterEnergyAndLedger(t *testing.T) {
	samples := fakeSMI(t)
	root := makeRoot(t, map[string]int{"A": 240})
	s := startSim(t, sim.Options{Speed: 40})
	s.SetFaults(sim.Faults{StreamErrorRate: 0.1})
	var log syncBuffer
	cfg := Config{Root: root, Server: s.URL(), API: "generate", Concurrency: 16, PowerEvery: testPowerEvery, MaxTokens: 300}
	if err := Run(context.Background(), cfg, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	by, _ := lastTallies(t, root, "A")
	if len(by) != 1 {
		t.Fatalf("tallies of %d runs, want 1", len(by))
	}
	var tl parse.RunTally
	for _, v := range by {
		tl = v
	}
	if !tl.Final || tl.Energy == nil {
		t.Fatalf("tally %+v: want a final one with energy", tl)
	}
	e := tl.Energy
	checkEnergy(t, e, pyEnergy(t, samples, MaxGapSamples*testPowerEvery))
	if e.Records != 240 {
		t.Errorf("records %d, want 240", e.Records)
	}
	l := tl.Ledger
	checkLedger(t, l, root, simMetrics(t, s).GenTokens)
	t.Log(l.Text(), "; ", parse.EnergyText(e, parse.CostRate{PerKWh: 0.3, Currency: "EUR"}))
	if l.Retried == 0 {
		t.Errorf("no retried tokens, with 10%% of streams cut:\n%s", l.Text())
	}
	if u, _ := l.Unexplained(); !l.Alone() {
		t.Errorf("unexplained %d of %d: the worker is the sim's only client: %s", u, *l.Generated, l.Text())
	}
}

// A worker stopped and started again: each run integrates its own time;
// the restart is a break (a stretch more), not a trapezoid across the gap.
func TestMeterRestartIsABreak(t *testing.T) {
	samples := fakeSMI(t)
	root := makeRoot(t, map[string]int{"A": 300})
	s := startSim(t, sim.Options{Speed: 40})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for countLines(t, filepath.Join(root, "prepared", "A", parse.RawFile)) < 60 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	var log syncBuffer
	// a grace too short for the requests in flight: the stop cuts them
	cfg := Config{Root: root, Server: s.URL(), API: "generate", Concurrency: 16, PowerEvery: testPowerEvery, MaxTokens: 400, Grace: time.Millisecond}
	if err := Run(ctx, cfg, &log); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * testPowerEvery) // the worker is down: nothing is sampled
	if err := Run(context.Background(), cfg, &log); err != nil {
		t.Fatal(err)
	}
	by, ts := lastTallies(t, root, "A")
	if len(by) != 2 {
		t.Fatalf("tallies of %d runs, want 2", len(by))
	}
	_, e := ts.Sum()
	py := pyEnergy(t, samples, MaxGapSamples*testPowerEvery)
	if e == nil || e.Stretches < 2 || e.Stretches != int(py["stretches"]) {
		t.Fatalf("energy %+v: want the stretches Python finds (%v), at least 2", e, py["stretches"])
	}
	if math.Abs(e.Joules-py["joules"]) > 1e-6*py["joules"] {
		t.Errorf("two runs: %.1f J; Python, breaking at the gap: %.1f J (a spike across the gap would add ~%.0f J)",
			e.Joules, py["joules"], 20*testPowerEvery.Seconds()*300)
	}
	kept, _ := pyRecordTokens(t, root, "A")
	l, _ := ts.Sum()
	if l.Kept != kept || e.Records != 300 {
		t.Errorf("kept %d over the two runs, Python counts %d; records %d", l.Kept, kept, e.Records)
	}
	t.Log(l.Text())
	if l.Aborted == 0 {
		t.Errorf("no aborted tokens, with 16 requests cut by the stop: %s", l.Text())
	}
}

// No nvidia-smi: the energy is null, never zero, and the ledger stands.
func TestMeterNoGPU(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	root := makeRoot(t, map[string]int{"A": 20})
	s := startSim(t, sim.Options{Speed: 60})
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), Concurrency: 4, PowerEvery: testPowerEvery}, &log); err != nil {
		t.Fatal(err)
	}
	by, _ := lastTallies(t, root, "A")
	for _, tl := range by {
		if tl.Energy != nil || tl.Ledger.Generated == nil {
			t.Errorf("tally %+v: want no energy, a generated count", tl)
		}
	}
	data, _ := os.ReadFile(filepath.Join(root, "prepared", "A", parse.RunsFile))
	if !bytes.Contains(data, []byte(`"energy":null`)) {
		t.Errorf("runs.jsonl does not say energy null:\n%s", data)
	}
}

// A server with no /metrics: the run's generated tokens are its log's
// decode lines' throughput times the time between them (written here,
// after the worker first looked: what was before is history), and the
// ledger says it is the log's estimate.
func TestMeterGeneratedFromTheLog(t *testing.T) {
	root := makeRoot(t, map[string]int{"A": 24})
	s := startSim(t, sim.Options{Speed: 30, NoMetrics: true})
	logPath := filepath.Join(root, filepath.FromSlash(parse.ServerLogPath))
	line := func(at string, perSec float64) string {
		return fmt.Sprintf("[2026-12-06 %s DP0 TP0] Decode batch, #running-req: 4, #token: 900, token usage: 0.10, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: 0\n", at, perSec)
	}
	if err := os.WriteFile(logPath, []byte(line("00:59:00", 999)), 0o644); err != nil { // history
		t.Fatal(err)
	}
	go func() {
		for countLines(t, filepath.Join(root, "prepared", "A", parse.RawFile)) < 5 {
			time.Sleep(10 * time.Millisecond)
		}
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		f.WriteString(line("01:00:00", 500) + line("01:01:00", 100) + line("01:02:00", 50))
	}()
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), Concurrency: 2, PowerEvery: testPowerEvery}, &log); err != nil {
		t.Fatal(err)
	}
	_, ts := lastTallies(t, root, "A")
	l, _ := ts.Sum()
	if l.Generated == nil || *l.Generated != 100*60+50*60 || l.GeneratedFrom != parse.GenFromLog {
		t.Fatalf("generated %v from %q, want %d from the log: %s", l.Generated, l.GeneratedFrom, 100*60+50*60, l.Text())
	}
	if !strings.Contains(l.Text(), "an estimate") {
		t.Errorf("text: %s", l.Text())
	}
}
