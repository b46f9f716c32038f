package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// Names and warnings come from the host: text status prints no escape
// sequence and no tab of theirs.
func TestTextStatusIsSanitised(t *testing.T) {
	var b bytes.Buffer
	printStatus(&b, snapshot.Snapshot{Host: "h", Root: "/r\x1b]0;TITLE\a", Connection: snapshot.Connection{State: snapshot.LinkConnected, Reader: "go agent /opt/sw\x1b]0;x\a", AgentProtocol: "synthwatch-agent/6"},
		Categories: []snapshot.Category{{Name: "B\x1b]0;TITLE-HIJACK\a\x1b[2J\tx", Class: "SHORT"}},
		Warnings:   []string{"runs.jsonl model \x1b[5mblink\x1b[0m"}})
	out := b.String()
	if strings.ContainsRune(out, 0x1b) || strings.Contains(out, "\a") || strings.Contains(out, "B\t") {
		t.Fatalf("raw control bytes in:\n%q", out)
	}
	if !strings.Contains(out, "B x") || !strings.Contains(out, "blink") || !strings.Contains(out, "read by: go agent /opt/sw") || !strings.Contains(out, " · synthwatch-agent/6") {
		t.Fatalf("the text itself is lost:\n%q", out)
	}
}

// Row ETAs print as durations: 10 s is 10s, not "1" (finding 9).
func TestStatusTextETAs(t *testing.T) {
	secs := func(v float64) *float64 { return &v }
	s := snapshot.Snapshot{Host: "h", Root: "/r", ETASeconds: secs(130)}
	want := map[string]string{"C0": "0s", "C10": "10s", "C70": "1m10s", "C130": "2m10s"}
	for _, n := range []string{"C0", "C10", "C70", "C130"} {
		v, _ := strconv.ParseFloat(n[1:], 64)
		s.Categories = append(s.Categories, snapshot.Category{Name: n, Class: "SHORT", ETASeconds: secs(v), State: "running"})
	}
	s.Categories = append(s.Categories, snapshot.Category{Name: "CNIL", Class: "SHORT", State: "pending"})
	var b bytes.Buffer
	printStatus(&b, s)
	out := b.String()
	if !strings.Contains(out, "ETA: 2m10s\n") {
		t.Errorf("pipeline ETA:\n%s", out)
	}
	want["CNIL"] = "-"
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 8 || want[f[0]] == "" {
			continue
		}
		if f[6] != want[f[0]] {
			t.Errorf("%s: ETA %q, want %q in:\n%s", f[0], f[6], want[f[0]], out)
		}
		delete(want, f[0])
	}
	if len(want) != 0 {
		t.Errorf("rows not found %v in:\n%s", want, out)
	}
}

// The host's vitals are one line of text status, and absent when nothing
// was read (a stale snapshot, or a host without nvidia-smi shows no GPUs).
func TestStatusTextVitals(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	s := snapshot.Snapshot{Host: "h", Root: "/r"}
	var b bytes.Buffer
	printStatus(&b, s)
	if strings.Contains(b.String(), "host:") {
		t.Fatalf("vitals line without vitals:\n%s", b.String())
	}
	s.Vitals = snapshot.Vitals{Load1: f(3.5), WorkerRSSBytes: i(3 << 29), Disk: &snapshot.Disk{FreeBytes: 1 << 40, TotalBytes: 4 << 40},
		GPUs: []snapshot.GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3\x1b]0;x\a", UtilPct: f(50), TempC: f(60), MemUsedMiB: f(40960), MemTotalMiB: f(81920), PowerW: f(400)}, {Index: 1, UtilPct: f(100)}}}
	b.Reset()
	printStatus(&b, s)
	if !strings.Contains(b.String(), "host: GPU 2× util 75% 60°C 40/80 GiB 400 W | disk 1.0 TiB free 25% | load 3.5 | worker 1.5 GiB\n") {
		t.Fatalf("vitals:\n%s", b.String())
	}
}

// Budgets, totals and provenance are in the text status, below the table.
func TestStatusTextTokens(t *testing.T) {
	tok, total := int64(6_300_000), int64(6_300_000)
	s := snapshot.Snapshot{CompletionTokens: total, Categories: []snapshot.Category{{Name: "B3", Class: "SHORT", State: "running",
		CompletionTokens: &tok, TokenBudget: 10_000_000, CappedBy: snapshot.CapTokens,
		Configs: []snapshot.ConfigCount{{Config: "fp8-kv", Records: 1652}, {Config: "bf16", Records: 5348}}}}}
	var b bytes.Buffer
	printStatus(&b, s)
	for _, want := range []string{"completion tokens: 6300000\n", "B3: 6300000/10000000 (budget first) tokens; records by config: 1,652 fp8-kv · 5,348 bf16"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}

// Records whose tokens are unknown are counted beside the sum, in the
// total and in the category's line, never as 0 tokens.
func TestStatusTextTokensUnknown(t *testing.T) {
	tok := int64(1_234_567)
	s := snapshot.Snapshot{CompletionTokens: tok, TokensUnknown: 37, Categories: []snapshot.Category{{Name: "B1", Class: "SHORT", State: "running",
		CompletionTokens: &tok, TokensUnknown: 37}}}
	var b bytes.Buffer
	printStatus(&b, s)
	for _, want := range []string{"completion tokens: 1234567 (+37 records unknown)\n", "  B1: 1234567 tokens (+37 records unknown)\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}

// A category whose tokens are being summed (by the fallback's slices, a
// --follow line) is named so in the text's tokens line, with how far:
// the dashboard's words, never a figure.
func TestStatusTextSaysSumming(t *testing.T) {
	fig := int64(5000)
	sum := &snapshot.Summing{Done: 400, Total: 1000}
	s := snapshot.Snapshot{Host: "h", Root: "/r", CompletionTokens: fig, TokensPartial: true, TokensSumming: sum,
		Categories: []snapshot.Category{{Name: "B1", Class: "SHORT", CompletionTokens: &fig}, {Name: "B2", Class: "SHORT", TokensSumming: sum}}}
	var b bytes.Buffer
	printStatus(&b, s)
	if want := "completion tokens: 5000 (some categories not added up yet: summing… 40 %)"; !strings.Contains(b.String(), want) {
		t.Fatalf("want %q in:\n%s", want, b.String())
	}
}
