package main

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/sim"
)

// fakeNvidiaSMI puts first on PATH an nvidia-smi that answers the power
// query as the real one does (`--query-gpu=timestamp,index,uuid,power.draw
// --format=csv,noheader,nounits`: "timestamp, index, uuid, watts" a GPU; NVIDIA's
// nvidia-smi(1), --help-query-gpu), its draw changing every call.
func fakeNvidiaSMI(t *testing.T) {
	dir := t.TempDir()
	script := `#!/bin/sh
[ "$1" = "--query-gpu=timestamp,index,uuid,power.draw" ] || { echo "unexpected: $*" >&2; exit 2; }
d=$(dirname "$0")
n=$(cat "$d/n" 2>/dev/null || echo 0); n=$((n+1)); echo "$n" >"$d/n"
ts=$(date +"%Y/%m/%d %H:%M:%S.%3N")
printf '%s, 0, GPU-5c6e0d3a-1f2b-4c3d-8e9f-0a1b2c3d4e5f, %d.25\n%s, 1, GPU-6d7f1e4b-2a3c-4d5e-9f0a-1b2c3d4e5f60, %d.50\n' "$ts" $((100 + (n*37) % 300)) "$ts" $((60 + (n*11) % 90))
`
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// pySpend is scripts/spend.py's sums of the root.
type pySpend struct {
	Runs                                       int
	Kept, Truncated, Retried, Aborted, Counted int64
	Generated                                  *int64
	Joules, Seconds, GPUSeconds                float64 `json:"-"`
	Records, Stretches, EnergyRuns             int64   `json:"-"`
	RecordsTokens, RecordsTruncated            int64   `json:"-"`
}

func (p *pySpend) UnmarshalJSON(b []byte) error {
	type plain pySpend
	var raw struct {
		plain
		Joules           float64 `json:"joules"`
		Seconds          float64 `json:"seconds"`
		GPUSeconds       float64 `json:"gpu_seconds"`
		Records          int64   `json:"records"`
		Stretches        int64   `json:"stretches"`
		EnergyRuns       int64   `json:"energy_runs"`
		RecordsTokens    int64   `json:"records_tokens"`
		RecordsTruncated int64   `json:"records_truncated"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*p = pySpend(raw.plain)
	p.Joules, p.Seconds, p.GPUSeconds, p.Records, p.Stretches, p.EnergyRuns = raw.Joules, raw.Seconds, raw.GPUSeconds, raw.Records, raw.Stretches, raw.EnergyRuns
	p.RecordsTokens, p.RecordsTruncated = raw.RecordsTokens, raw.RecordsTruncated
	return nil
}

// The Go worker, stopped once and started again, on two categories with
// streams cut now and then: status --json's ledger and energy are
// Python's sums of the runs' tallies, the kept tokens Python's count of
// the records, and status's text, --follow, the report's text, JSON and
// HTML print the same words.
func TestSpendInEveryView(t *testing.T) {
	testgate.E2E(t)
	py := testgate.Tool(t, "python3", "the tallies' sums")
	bin := testbin.Path(t)
	fakeNvidiaSMI(t)
	srv := sim.New(sim.Options{Speed: 40})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.SetFaults(sim.Faults{StreamErrorRate: 0.1})
	root := spendRoot(t)
	spendWork(t, bin, root, srv.URL(), 60)
	time.Sleep(2 * time.Second) // down: a break in the integral
	spendWork(t, bin, root, srv.URL(), 0)

	out, err := exec.Command(py, "../../scripts/spend.py", root).Output()
	if err != nil {
		t.Fatalf("spend.py: %v", err)
	}
	var want map[string]pySpend
	noErr(t, json.Unmarshal(out, &want))
	if a := want["A"]; a.Runs != 2 || a.Stretches < 2 {
		t.Errorf("A: %d runs, %d stretches: the restart must show", a.Runs, a.Stretches)
	}

	js, code := execCLI(t, "status", "--local", root, "--json")
	var snap snapshot.Snapshot
	if err := json.Unmarshal([]byte(js), &snap); err != nil || code != 0 {
		t.Fatalf("status --json: %d %v\n%s", code, err, js)
	}
	var words []string // every view must print these
	for _, c := range snap.Categories {
		checkSpend(t, c, want[c.Name])
		words = append(words, c.Name+": tokens: "+c.Spend.LedgerText, c.Name+": energy: "+c.Spend.EnergyText)
	}
	words = append(words, "tokens, the night: "+snap.Spend.LedgerText, "energy, the night: "+snap.Spend.EnergyText)
	spendWords(t, root, words)
	rj, _ := execCLI(t, "report", "--local", root, "--json")
	var r reportJSON
	noErr(t, json.Unmarshal([]byte(rj), &r))
	for _, c := range r.Summary.Categories {
		for _, sc := range snap.Categories {
			if sc.Name == c.Name && (c.Spend == nil || c.Spend.LedgerText != sc.Spend.LedgerText || c.Spend.EnergyText != sc.Spend.EnergyText) {
				t.Errorf("%s: the report's JSON says %+v, status %+v", c.Name, c.Spend, sc.Spend)
			}
		}
	}
	t.Log(strings.Join(words, "\n"))
}

// spendRoot is a root of two categories, A with 200 prompts and B with
// 80, and a [cost] of 0.3 EUR a kWh.
func spendRoot(t *testing.T) string {
	root := t.TempDir()
	for cat, n := range map[string]int{"A": 200, "B": 80} {
		dir := filepath.Join(root, "prepared", cat)
		noErr(t, os.MkdirAll(dir, 0o755))
		var p strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&p, `{"id": "%s-%04d", "messages": [{"role": "user", "content": "q %d"}]}`+"\n", cat, i, i)
		}
		noErr(t, os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644))
	}
	noErr(t, os.MkdirAll(filepath.Join(root, "logs"), 0o755))
	noErr(t, os.WriteFile(filepath.Join(root, parse.ManifestPath), []byte("[cost]\nper_kwh = 0.3\ncurrency = \"EUR\"\n"), 0o644))
	return root
}

// spendWork runs the Go worker on root, stopped by SIGTERM once A has
// stopAfter records (0: to the end).
func spendWork(t *testing.T, bin, root, url string, stopAfter int) {
	log, err := os.OpenFile(filepath.Join(root, "logs", "inference_all.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	noErr(t, err)
	defer log.Close()
	cmd := exec.Command(bin, "worker", "--root", root, "--server", url, "--api", "generate", "--max-tokens", "300",
		"--concurrency", "16", "--power-every", "150ms")
	cmd.Stdout, cmd.Stderr = log, log
	noErr(t, cmd.Start())
	if stopAfter > 0 {
		testgate.Eventually(t, time.Minute, "the first records", func() bool {
			return countFileLines(filepath.Join(root, "prepared", "A", parse.RawFile)) >= stopAfter
		})
		noErr(t, cmd.Process.Signal(syscall.SIGTERM))
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker: %v", err)
	}
}

// checkSpend holds a category's spend in status --json to Python's sums.
func checkSpend(t *testing.T, c snapshot.Category, w pySpend) {
	t.Helper()
	sp := c.Spend
	if sp == nil || sp.Energy == nil || sp.Ledger.Generated == nil || w.Generated == nil {
		t.Fatalf("%s: spend %+v, Python %+v", c.Name, sp, w)
	}
	l, e := sp.Ledger, sp.Energy
	got := fmt.Sprint(l.Kept, l.Truncated, l.Retried, l.Aborted, *l.Generated, sp.Runs, e.Records, e.Stretches)
	if want := fmt.Sprint(w.RecordsTokens, w.RecordsTruncated, w.Retried, w.Aborted, *w.Generated, w.Runs, w.Records, w.Stretches); got != want || l.Kept != w.Kept {
		t.Errorf("%s: kept, truncated, retried, aborted, generated, runs, records, stretches: %s; Python %s (kept %d)", c.Name, got, want, w.Kept)
	}
	if math.Abs(e.Joules-w.Joules) > 1e-9*w.Joules || math.Abs(*sp.Cost-w.Joules/3.6e6*0.3) > 1e-9 {
		t.Errorf("%s: %v J costing %v; Python %v J", c.Name, e.Joules, *sp.Cost, w.Joules)
	}
}

// spendWords: status, --follow, the report and its HTML page print words.
func spendWords(t *testing.T, root string, words []string) {
	text, _ := execCLI(t, "status", "--local", root)
	follow, _ := execCLI(t, "status", "--local", root, "--follow", "--count", "1")
	rep, _ := execCLI(t, "report", "--local", root)
	page := filepath.Join(t.TempDir(), "r.html")
	execCLI(t, "report", "--local", root, "--html", page)
	h, err := os.ReadFile(page)
	noErr(t, err)
	for name, v := range map[string]string{"status": text, "status --follow": follow, "report": rep, "report --html": html.UnescapeString(string(h))} {
		for _, w := range words {
			if !strings.Contains(v, w) {
				t.Errorf("%s lacks %q:\n%s", name, w, v)
			}
		}
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
