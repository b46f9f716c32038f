package worker

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/sim"
)

// worker.json's lines and extra_lines are measured at the resume scan: a
// raw file the Python script wrote (json.dumps separators) with duplicate
// ids, blank lines, a bad line and ids no prompt has. The worker appends
// only unique records after, so lines now − extra_lines is the unique
// records. failed_prompts counts prompts whose latest attempt failed, once
// each however many starts re-send them (integrity #20, #21).
func TestWorkerJSONLineFiguresAndFailedPrompts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var prompts, raw strings.Builder
	for i := range 60 {
		fmt.Fprintf(&prompts, `{"id": "p%d", "messages": [{"role": "user", "content": "q%d"}]}`+"\n", i, i)
	}
	for i := range 2 { // no messages: fails for good with --api chat
		fmt.Fprintf(&prompts, `{"id": "nomsg%d", "text": "t"}`+"\n", i)
	}
	py := func(id string) string {
		return fmt.Sprintf(`{"id": "%s", "category": "A", "content": "old", "completion_tokens": 10, "finish_reason": "stop"}`+"\n", id)
	}
	for i := range 30 {
		raw.WriteString(py(fmt.Sprintf("p%d", i)))
	}
	for i := range 5 {
		raw.WriteString(py(fmt.Sprintf("p%d", i))) // duplicates
	}
	raw.WriteString("\n\n   \n")                            // blank lines
	raw.WriteString(`{"id": "p40", "content": "cut` + "\n") // a bad line: its id is redone
	raw.WriteString(py("gone-1") + py("gone-2"))            // ids no prompt has
	dir := writeCat(t, root, "A", prompts.String(), []byte(raw.String()))
	rawPath := filepath.Join(dir, "raw_responses.jsonl")
	physical := countLines(t, rawPath) // 30 + 5 + 3 + 1 + 2
	s := startSim(t, sim.Options{Speed: 200})
	for run := 1; run <= 2; run++ {
		if cfg := (Config{Root: root, Server: s.URL(), Concurrency: 4}); run == 1 {
			runWorker(t, cfg) // p40 is redone: not every prompt sent failed
		} else {
			runWorkerFailed(t, cfg, "A") // only the 2 that fail are left
		}
		cat := readState(t, root)["categories"].([]any)[0].(map[string]any)
		lines, extra, failed := cat["lines"], cat["extra_lines"], cat["failed_prompts"]
		now := countLines(t, rawPath)
		switch run {
		case 1:
			if lines != float64(physical) || extra != float64(physical-30) {
				t.Fatalf("run 1: lines %v extra_lines %v, want %d and %d", lines, extra, physical, physical-30)
			}
		case 2:
			if lines != float64(now) || extra != float64(physical-30) {
				t.Fatalf("run 2: lines %v extra_lines %v, want %d and %d", lines, extra, now, physical-30)
			}
		}
		if unique := now - int(extra.(float64)); unique != 60 || cat["done"] != 60.0 {
			t.Fatalf("run %d: %d lines − %v extra = %d unique, done %v; want 60", run, now, extra, unique, cat["done"])
		}
		if failed != 2.0 {
			t.Fatalf("run %d: failed_prompts %v, want 2 (errors.jsonl has %d lines)", run, failed, countLines(t, filepath.Join(dir, "errors.jsonl")))
		}
	}
	if n := countLines(t, filepath.Join(dir, "errors.jsonl")); n != 4 {
		t.Fatalf("errors.jsonl: %d lines, want 2 per start", n)
	}
}
