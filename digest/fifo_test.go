package digest_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
)

// A FIFO at a category's runs.jsonl, worker.json or pipeline.toml is that
// category's error naming it or a file left out, at once: the digest never
// waits on it (the trial's `report` hung on a FIFO runs.jsonl until killed).
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
	cat := filepath.Base(filepath.Dir(runs[0]))
	done := make(chan error, 1)
	go func() {
		s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now})
		if err == nil {
			err = errors.New("no category " + cat)
			for _, c := range s.Categories {
				if c.Name == cat {
					err = errors.New(c.Error)
				}
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || err.Error() != "runs.jsonl: not a regular file (a FIFO)" {
			t.Fatalf("err %v, want %s's error naming runs.jsonl as no regular file", err, cat)
		}
	case <-time.After(60 * time.Second): // bounds a hang; measures nothing
		t.Fatal("the digest waits on a FIFO")
	}
}
