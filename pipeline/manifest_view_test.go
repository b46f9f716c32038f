package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// A typo in pipeline.toml's [gate] (min_pass_rate = 95, a percent where a
// fraction goes) leaves the gate out, says so, and keeps the rest: B2's
// class LONG and its token budget, so "over its token budget" still shows;
// the fix is read at the next full poll. Before, the whole file was
// dropped: B2 became SHORT and the budget's flag vanished.
func TestGateTypoKeepsTheManifest(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B2")
	write(t, filepath.Join(dir, parse.PromptsFile), prompts("B2", 100))
	write(t, filepath.Join(dir, parse.RawFile), records("B2", 0, 60)) // 12,000 tokens
	toml := "[classes.LONG]\nconcurrency = 4\n[[categories]]\nname = \"B2\"\nclass = \"LONG\"\ntoken_budget = 10000\n[gate]\nmin_pass_rate = 95\n"
	write(t, filepath.Join(root, parse.ManifestPath), toml)
	w := localWatcher(t, root, c, Options{})
	check := func(when string, warned bool) {
		t.Helper()
		var s snapshot.Snapshot
		for i := 0; i < 3; i++ { // the tokens are summed within a poll or two
			c.advance(2e9)
			s = poll(w)
		}
		b2 := catByName(t, s, "B2")
		said := false
		for _, x := range s.Warnings {
			said = said || strings.Contains(x, "min_pass_rate") && strings.Contains(x, "the rest of the file stands")
		}
		if b2.Class != "LONG" || len(b2.OverCap) == 0 || said != warned {
			t.Fatalf("%s: class %q over %v, warned %v: %q", when, b2.Class, b2.OverCap, said, s.Warnings)
		}
	}
	check("the typo", true)
	if err := os.WriteFile(filepath.Join(root, parse.ManifestPath), []byte(strings.Replace(toml, "95", "0.95", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	w.polls += 30 - w.polls%30 // the next poll is a full one
	check("fixed", false)
}
