package worker

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// vmRSS is this process's resident set, in bytes (/proc/self/status).
func vmRSS(t testing.TB) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestEndlessAnswerIsEnded: a server that streams 64 KiB deltas every
// millisecond and never finishes (integrity review 7: 6.6 GB in 30 s). Each
// answer is ended once it passes what max_tokens allows, goes to
// errors.jsonl with why, and the run ends; the process's RSS stays within a
// few tens of MB of where it began, on both APIs. Not parallel: it reads the
// whole process's RSS.
func TestEndlessAnswerIsEnded(t *testing.T) {
	for _, api := range []string{"chat", "generate"} {
		t.Run(api, func(t *testing.T) {
			s := startSim(t, sim.Options{})
			s.SetFaults(sim.Faults{EndlessBytes: 64 << 10})
			const n = 40
			root := makeRoot(t, map[string]int{"B1": n})
			if api == "generate" { // prompts with text: no templating needed
				var b strings.Builder
				for i := range n {
					b.WriteString(`{"id":"B1-` + strconv.Itoa(i) + `","text":"question"}` + "\n")
				}
				if err := os.WriteFile(filepath.Join(root, "prepared", "B1", "prompts.jsonl"), []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			base := vmRSS(t)
			peak := base
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				for {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
						peak = max(peak, vmRSS(t))
					}
				}
			}()
			// the deadline only guards against a hang: without the bound no
			// answer ends and the run would go on for ever
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var log syncBuffer
			err := Run(ctx, Config{Root: root, Server: s.URL(), API: api, Concurrency: 4, MaxTokens: 10240}, &log)
			close(stop)
			<-sampled
			if ctx.Err() != nil {
				t.Fatalf("the run did not end: the endless answers were never cut\n%s", log.String())
			}
			_ = err // every prompt failed: Run says so
			lines := readErrorLines(t, filepath.Join(root, "prepared", "B1", parse.ErrorsFile))
			if len(lines) != n {
				t.Fatalf("errors.jsonl has %d lines, want %d (one per prompt)", len(lines), n)
			}
			for _, l := range lines {
				if !strings.Contains(l, "answer ended by the worker") || !strings.Contains(l, "max_tokens 10240") {
					t.Fatalf("error line does not say why: %s", l)
				}
			}
			if !strings.Contains(log.String(), "answer ended by the worker") {
				t.Errorf("the log does not say the answers were ended:\n%s", log.String())
			}
			if _, err := os.Stat(filepath.Join(root, "prepared", "B1", parse.RawFile)); err == nil {
				if c := countLines(t, filepath.Join(root, "prepared", "B1", parse.RawFile)); c != 0 {
					t.Errorf("%d records written from endless answers", c)
				}
			}
			// 4 requests × the 720 KB bound, plus the decoding, is well
			// under this; without the bound it grows by GBs
			if grow := peak - base; grow > 96<<20 {
				t.Errorf("RSS grew %d MB (from %d MB), want flat", grow>>20, base>>20)
			}
			t.Logf("RSS %d MB at the start, peak %d MB", base>>20, peak>>20)
		})
	}
}

func readErrorLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}
