package worker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// Integrity review finding 6: category names went raw into the worker log,
// so `tail -f` ran OSC 52 clipboard writes, retitled and cleared the
// terminal, and a newline in a name forged log lines the dashboard parses.
// Hostile ids are in the same log.
func TestWorkerLogIsSanitised(t *testing.T) {
	t.Parallel()
	names := map[string]int{
		"osc52\x1b]52;c;cHduZWQ=\ax":            2,
		"title\x1b]0;PWNED-TITLE\ay":            2,
		"cursor\x1b[2J\x1b[Hhome":               2,
		"nl\nAll categories finished.":          2,
		"c1\u009b31mred":                        2,
		"nl2\n[2026-01-01 00:00:00] Processing": 2,
	}
	root := makeRoot(t, names)
	for name := range names { // ids that are valid JSON for these names
		id, _ := json.Marshal(name)
		line := `{"id":` + string(id) + `,"messages":[{"role":"user","content":"q"}]}` + "\n"
		if err := os.WriteFile(filepath.Join(root, "prepared", name, "prompts.jsonl"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startSim(t, sim.Options{Speed: 200})
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), Concurrency: 2}, &log); err != nil {
		t.Fatal(err)
	}
	out := log.String()
	if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 }); i >= 0 {
		t.Fatalf("control character %q in the log at %d:\n%q", out[i], i, out)
	}
	if n := strings.Count(out, "\n"+parse.FinishedLine+"\n"); n != 1 {
		t.Errorf("%d lines read %q, want 1 (the real one):\n%s", n, parse.FinishedLine, out)
	}
	kinds := 0
	for _, l := range strings.Split(out, "\n") {
		if parse.ParseWorkerLine(l).Kind == parse.WProcessing {
			kinds++
		}
	}
	if kinds != len(names) || strings.Count(out, "1 records written by this run") != len(names) {
		t.Errorf("%d Processing headers for %d categories:\n%s", kinds, len(names), out)
	}
}
