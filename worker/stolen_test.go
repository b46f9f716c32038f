package worker

import (
	"context"
	"errors"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/sim"
)

// Integrity review finding 2: `rm -rf run` (or `mv run run.old; mkdir run`)
// under a running worker, then a second worker, gave 28-36 duplicate
// records: the first kept appending for up to a second after the second had
// scanned the file. Now the second is refused while the first lives (the
// root's flock), and the first stops before its next append (Lock.Held on
// every write). A third start finishes the job: every id exactly once.
func TestStolenLockWritesNoDuplicate(t *testing.T) {
	testgate.E2E(t) // 25 s: CI's end-to-end run, not the quick suite
	t.Parallel()
	for _, how := range []string{"rm -rf run", "mv run run.old; mkdir run"} {
		t.Run(how, func(t *testing.T) {
			root := makeRoot(t, map[string]int{"A": 3000})
			s := startSim(t, sim.Options{Speed: 100})
			raw := filepath.Join(root, "prepared", "A", "raw_responses.jsonl")
			cfg := Config{Root: root, Server: s.URL(), Concurrency: 64, Grace: 10 * time.Second}
			first := make(chan error, 1)
			go func() { first <- Run(context.Background(), cfg, &syncBuffer{}) }()
			deadline := time.Now().Add(60 * time.Second)
			for countLines(t, raw) < 100 {
				if time.Now().After(deadline) {
					t.Fatal("the first worker wrote fewer than 100 records in 60 s")
				}
				time.Sleep(5 * time.Millisecond)
			}
			run := filepath.Join(root, "run")
			if how == "rm -rf run" {
				if err := os.RemoveAll(run); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := os.Rename(run, run+".old"); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(run, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// second workers, one after the other, until one gets in
			var second error
			refused := 0
			for {
				second = Run(context.Background(), cfg, &syncBuffer{})
				if !errors.Is(second, ErrLocked) {
					break
				}
				refused++
			}
			err1 := <-first
			if !errors.Is(err1, ErrLockLost) {
				t.Errorf("first worker ended with %v, want a lost lock", err1)
			}
			if second != nil {
				t.Fatalf("second worker: %v", second)
			}
			t.Logf("%s: the second worker was refused %d times before the first had stopped", how, refused)
			checkOutput(t, root, "A", 3000) // every id once: no duplicate
		})
	}
}
