package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/sim"
)

// runBounded runs a worker and fails the test if it does not end in time:
// a FIFO used to hold it in open(2) for good.
func runBounded(t *testing.T, cfg Config) (string, error) {
	t.Helper()
	var log syncBuffer
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), cfg, &log) }()
	select {
	case err := <-done:
		return log.String(), err
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker hangs; log:\n%s", log.String())
		return "", nil
	}
}

// Integrity review finding 7: a symlink planted at an output file made the
// worker cut a file outside the root and append to it. Each output file
// planted as a link is refused by name, and its target is left as it was.
func TestOutputSymlinkIsNotFollowed(t *testing.T) {
	t.Parallel()
	s := startSim(t, sim.Options{Speed: 200})
	for _, name := range []string{"errors.jsonl", "raw_responses.jsonl", "runs.jsonl"} {
		t.Run(name, func(t *testing.T) {
			root := makeRoot(t, map[string]int{"A": 5})
			victim := filepath.Join(t.TempDir(), "victim.conf")
			const content = "line1 keep\nsetting = important-value-without-final-newline"
			if err := os.WriteFile(victim, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(root, "prepared", "A", name)); err != nil {
				t.Fatal(err)
			}
			log, _ := runBounded(t, Config{Root: root, Server: s.URL(), Concurrency: 2})
			if data, _ := os.ReadFile(victim); string(data) != content {
				t.Errorf("the file outside the root was changed to %q", data)
			}
			if !strings.Contains(log, name+" is a symlink") {
				t.Errorf("the log does not name the link:\n%s", log)
			}
		})
	}
}

// Integrity review finding 1: a FIFO where an output or input file should
// be is refused by name at once, never waited on.
func TestFIFOIsRefusedByName(t *testing.T) {
	t.Parallel()
	s := startSim(t, sim.Options{Speed: 200})
	for _, rel := range []string{"prepared/A/raw_responses.jsonl", "prepared/A/errors.jsonl", "prepared/A/runs.jsonl", "prepared/A/prompts.jsonl", "pipeline.toml"} {
		t.Run(rel, func(t *testing.T) {
			root := makeRoot(t, map[string]int{"A": 5})
			p := filepath.Join(root, filepath.FromSlash(rel))
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			log, err := runBounded(t, Config{Root: root, Server: s.URL(), Concurrency: 2})
			msg := log
			if err != nil {
				msg += err.Error()
			}
			if !strings.Contains(msg, p+": not a regular file (a FIFO)") {
				t.Errorf("neither the log nor the error (%v) names the FIFO %s:\n%s", err, p, log)
			}
		})
	}
}
