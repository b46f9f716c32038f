package remote

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
)

// gateOfT reads the gate's counts that end the agent's T line of range 1.
func gateOfT(t *testing.T, out []byte) digesttest.GateTruth {
	t.Helper()
	f := strings.Fields(strings.SplitN(string(out), "\n", 2)[0])
	if len(f) != 22 || f[1] != "T" {
		t.Fatalf("T line %q: want 20 counts", f)
	}
	n := func(i int) int64 {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return digesttest.GateTruth{Records: n(2), Empty: n(14), NoReasoning: n(15), Stray: n(16), Over: n(17), PassPlain: n(19), PassThinking: n(20)}
}

func sameCounts(g, want digesttest.GateTruth) bool {
	want.Thinking, want.Pass = false, 0
	return g == want
}

// The agent's gate counts of a file the old script wrote (python3's
// json.dumps) are Python's json module's count, from the first read,
// through appends read from where the kept sums end, and when
// pipeline.toml's max_length changes (the kept counts are summed again
// under it); a new agent answers the same from what the last one kept.
func TestAgentGateIsPythonsCount(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := t.TempDir()
	digesttest.GateNight(t, root, 300)
	raw := filepath.Join(root, parse.PreparedDir, "B1_reason", parse.RawFile)
	ask := func(ts *tokenSums) digesttest.GateTruth {
		fi, err := os.Stat(raw)
		must(t, err)
		return gateOfT(t, ts.ranges([]string{raw, "1", strconv.FormatInt(fi.Size(), 10)}))
	}
	check := func(step string, ts *tokenSums, maxLength int64) {
		t.Helper()
		if got, want := ask(ts), digesttest.GateCount(t, root, maxLength, "auto")["B1_reason"]; !sameCounts(got, want) {
			t.Errorf("%s: the agent's %+v, Python's %+v", step, got, want)
		}
	}
	ts := newTokenSums()
	check("first read", ts, digesttest.GateMaxLength)
	before := ts.files[raw].Off
	digesttest.GateAppend(t, testgate.Tool(t, "python3", "appends"), raw, 120, 9)
	check("after an append", ts, digesttest.GateMaxLength)
	if k := ts.files[raw]; k.Off <= before || k.G.Records != 420 {
		t.Errorf("kept sums after the append: %d bytes, %d records", k.Off, k.G.Records)
	}
	manifest := filepath.Join(root, parse.ManifestPath)
	must(t, os.WriteFile(manifest, []byte("[gate]\nmax_length = 3000\n"), 0o644))
	future := time.Now().Add(time.Minute) // a new mtime whatever the clock's grain
	must(t, os.Chtimes(manifest, future, future))
	check("max_length changed", ts, 3000)
	if g := ts.files[raw].G; g.MaxLength != 3000 {
		t.Errorf("kept counts judged against %d", g.MaxLength)
	}
	ts.save()
	check("a new agent", newTokenSums(), 3000)
}
