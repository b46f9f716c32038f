package digest_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
)

// A FIFO at a category's runs.jsonl, worker.json or pipeline.toml is an
// error naming it or a file left out, at once: the digest never waits on
// it (the trial's `report` hung on a FIFO runs.jsonl until killed).
func TestDigestNeverWaitsOnAFIFO(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	digesttest.Night(t, root, now, digesttest.Options{})
	runs, _ := filepath.Glob(filepath.Join(root, "prepared", "*", "runs.jsonl"))
	if len(runs) == 0 {
		t.Fatal("the night has no runs.jsonl")
	}
	for _, p := range []string{runs[0], filepath.Join(root, "run", "worker.json"), filepath.Join(root, "pipeline.toml")} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil { // frees a reader a failing run left
				f.Close()
			}
		})
	}
	done := make(chan error, 1)
	go func() {
		_, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), runs[0]) {
			t.Fatalf("err %v, want one naming %s as no regular file", err, runs[0])
		}
	case <-time.After(60 * time.Second): // bounds a hang; measures nothing
		t.Fatal("the digest waits on a FIFO")
	}
}
