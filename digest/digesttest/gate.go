package digesttest

import (
	_ "embed" // gate.py
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
)

//go:embed gate.py
var gatePy string

// GateManifest is the [gate] of GateNight's pipeline.toml: a thinking
// model's night with a training max_length of 6,000 tokens, judged after
// 50 records.
const GateManifest = "[gate]\nmax_length = 6000\nmin_records = 50\n"

// GateMaxLength is GateManifest's max_length.
const GateMaxLength = 6000

// GateNight writes a root as the old script left it, with a [gate] in its
// pipeline.toml: B1_reason n records and B2_reason n/2, written by
// python3's json.dumps (timestamp, content, reasoning_content,
// finish_reason, usage), with null answers cut at max_tokens, records
// with no reasoning, think markers left in the answer, blank answers and
// records over max_length among them (gate.py write). A missing python3
// fails under CI=true and skips elsewhere.
func GateNight(t testing.TB, dir string, n int) {
	t.Helper()
	GateNightAt(t, dir, n, time.Now().Add(-time.Hour))
}

// GateNightAt is GateNight with its records a second apart from start
// (a golden's fixed night).
func GateNightAt(t testing.TB, dir string, n int, start time.Time) {
	t.Helper()
	py := testgate.Tool(t, "python3", "the gate's Python-written root")
	if err := os.WriteFile(filepath.Join(dir, parse.ManifestPath), []byte(GateManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, cat := range []string{"B1_reason", "B2_reason"} {
		d := filepath.Join(dir, parse.PreparedDir, cat)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		recs := n >> i
		var prompts strings.Builder
		for j := range recs * 2 {
			prompts.WriteString(`{"id": "q-` + strconv.Itoa(j) + `", "messages": []}` + "\n")
		}
		if err := os.WriteFile(filepath.Join(d, parse.PromptsFile), []byte(prompts.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		gateWrite(t, py, filepath.Join(d, parse.RawFile), recs, i+1, start)
	}
}

// GateAppend appends n records to file by gate.py's writer (seeded),
// their times from an hour ago.
func GateAppend(t testing.TB, py, file string, n, seed int) {
	t.Helper()
	gateWrite(t, py, file, n, seed, time.Now().Add(-time.Hour))
}

func gateWrite(t testing.TB, py, file string, n, seed int, start time.Time) {
	t.Helper()
	at := strconv.FormatInt(start.Unix(), 10)
	if out, err := exec.Command(py, "-c", gatePy, "write", file, strconv.Itoa(n), strconv.Itoa(seed), at).CombinedOutput(); err != nil {
		t.Fatalf("python3 gate.py write: %v: %s", err, out)
	}
}

// GateTruth is one category's gate as Python's json module counts it.
type GateTruth struct {
	Records      int64 `json:"records"`
	Empty        int64 `json:"empty"`
	NoReasoning  int64 `json:"no_reasoning"`
	Stray        int64 `json:"stray"`
	Over         int64 `json:"over"`
	PassPlain    int64 `json:"pass_plain"`
	PassThinking int64 `json:"pass_thinking"`
	Thinking     bool  `json:"thinking"`
	Pass         int64 `json:"pass"`
}

// GateCount is every category's gate under root, counted by gate.py
// (Python's json.loads of each whole line) under max_length and thinking.
func GateCount(t testing.TB, root string, maxLength int64, thinking string) map[string]GateTruth {
	t.Helper()
	py := testgate.Tool(t, "python3", "the gate's count by Python's json module")
	out, err := exec.Command(py, "-c", gatePy, "count", root, strconv.FormatInt(maxLength, 10), thinking).Output()
	if err != nil {
		t.Fatalf("python3 gate.py count: %v", err)
	}
	var m map[string]GateTruth
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("python3 gate.py count: %v: %s", err, out)
	}
	return m
}

// Failures is the truth's failures by reason, in parse.GateVerdict's
// reasons (those that fail under its thinking and a max_length set).
func (g GateTruth) Failures() map[string]int64 {
	out := map[string]int64{}
	add := func(reason string, n int64, on bool) {
		if on && n > 0 {
			out[reason] = n
		}
	}
	add(parse.GateEmpty, g.Empty, true)
	add(parse.GateNoReasoning, g.NoReasoning, g.Thinking)
	add(parse.GateStray, g.Stray, g.Thinking)
	add(parse.GateOver, g.Over, true)
	return out
}

// SameGate says v is the truth's verdict ("" when it is, else what differs).
func SameGate(v *parse.GateVerdict, g GateTruth) string {
	if v == nil {
		return "no verdict"
	}
	got := map[string]int64{}
	for _, f := range v.Failures {
		got[f.Reason] = f.Records
	}
	want := g.Failures()
	if v.Pass != g.Pass || v.Examined != g.Records || v.Thinking != g.Thinking || len(got) != len(want) {
		return "pass " + strconv.FormatInt(v.Pass, 10) + " of " + strconv.FormatInt(v.Examined, 10) + ", want " + strconv.FormatInt(g.Pass, 10) + " of " + strconv.FormatInt(g.Records, 10)
	}
	for r, n := range want {
		if got[r] != n {
			return r + ": " + strconv.FormatInt(got[r], 10) + ", want " + strconv.FormatInt(n, 10)
		}
	}
	return ""
}
