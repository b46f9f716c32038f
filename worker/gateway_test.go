package worker

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// interactive sends chat requests as X-SMG-Priority: interactive through
// url from n clients until ctx ends: the other traffic of a shared gateway.
func interactive(ctx context.Context, url string, n int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions",
					bytes.NewReader([]byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":64}`)))
				req.Header.Set("X-SMG-Priority", "interactive")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	return &wg
}

// TestGatewayPreemptsBulk: a shared gateway (the sim's router with smg's
// priority admission, 12 slots in front of a server that runs 8 at once)
// and interactive traffic beside the run. The worker finds the gateway,
// sends bulk, and each 503 + X-SMG-Preempted is a yield: the prompt is sent
// again, no attempt is spent, nothing is counted failed. Every prompt is
// written once, errors.jsonl stays empty, worker.json counts exactly the
// yields the gateway made, and the window says why it stepped back.
func TestGatewayPreemptsBulk(t *testing.T) {
	t.Parallel()
	s := startSim(t, sim.Options{Speed: 40, Capacity: 8})
	r := sim.NewRouter([]string{s.URL()}, time.Hour, nil)
	r.EnablePriority(12)
	if err := r.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	const n = 300
	root := makeRoot(t, map[string]int{"B1": n})
	ctx, stop := context.WithCancel(context.Background())
	others := interactive(ctx, r.URL(), 4)
	var log syncBuffer
	err := Run(context.Background(), Config{Root: root, Server: r.URL(), MaxConcurrency: 32, AdaptEvery: 200 * time.Millisecond, MaxAttempts: 1}, &log)
	stop()
	others.Wait()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	checkOutput(t, root, "B1", n)
	if data, err := os.ReadFile(filepath.Join(root, "prepared", "B1", parse.ErrorsFile)); err == nil && len(bytes.TrimSpace(data)) > 0 {
		t.Fatalf("errors.jsonl is not empty:\n%s", data)
	}
	yielded := r.Preempted("bulk")
	if yielded == 0 {
		t.Fatalf("the gateway preempted no bulk request (admitted %d bulk, %d interactive): the test proves nothing", r.Admitted("bulk"), r.Admitted("interactive"))
	}
	if r.Admitted("default") != 0 {
		t.Errorf("%d requests came without the bulk class", r.Admitted("default"))
	}
	data, err := os.ReadFile(filepath.Join(root, "run", "worker.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := parse.ParseWorkerState(data)
	if err != nil {
		t.Fatal(err)
	}
	c := st.Categories[0]
	if c.Yielded != yielded || c.Errors != 0 || c.FailedPrompts == nil || *c.FailedPrompts != 0 {
		t.Errorf("worker.json: yielded %d (the gateway preempted %d), errors %d, failed %v", c.Yielded, yielded, c.Errors, c.FailedPrompts)
	}
	out := log.String()
	for _, want := range []string{"requests go as X-SMG-Priority: bulk", "not counted as a failure",
		"B1: the window stepped back", "↓ yielded to other traffic ("} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not say %q:\n%s", want, out)
		}
	}
	t.Logf("%d prompts, %d yields", n, yielded)
}
