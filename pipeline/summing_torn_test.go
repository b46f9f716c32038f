package pipeline

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A big records file whose last record its writer never finished (the
// old script killed mid-write: a torn line that stays) is summed to its
// last whole line, and then has its figure: the dashboard does not say
// "summing… 99 %" for the rest of the night; with a time budget an
// answer or none.
func TestDashboardSumsToATornTail(t *testing.T) {
	t.Parallel()
	sd := sshdtest.Start(t)
	p := newProxied(t, sd)
	for _, within := range []time.Duration{2 * time.Millisecond, 0} {
		t.Run(within.String(), func(t *testing.T) { sumsToATornTail(t, p, within) })
	}
}

func sumsToATornTail(t *testing.T, p *proxied, within time.Duration) {
	rng := rand.New(rand.NewPCG(43, 11))
	root, raw := summingRoot(t, rng)
	f, err := os.OpenFile(raw, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(`{"id": "B2_big-torn", "messages": [{"role": "user", "content": "q"}], "response": "an answ`)
	must(t, err)
	must(t, f.Close())
	h := p.dial(t)
	t.Cleanup(func() { h.Close() })
	w := NewWatcher(h, Options{Host: "dash", Root: root, ServerURL: closedURL(t), WorkerBin: testbin.Path(t), SumWithin: within}, nil)
	figureAfterTail(t, w, root, "the torn line")
	// the writer finishes the line after all: the hole sums on to it
	f, err = os.OpenFile(raw, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(`er", "usage": {"prompt_tokens": 3, "completion_tokens": 71, "total_tokens": 74}}` + "\n")
	must(t, err)
	must(t, f.Close())
	figureAfterTail(t, w, root, "the torn line finished")
}

// figureAfterTail polls w until its big category has the file's figure,
// failing when it stays without one while the sum goes no further.
func figureAfterTail(t *testing.T, w *Watcher, root, step string) {
	t.Helper()
	var last snapshot.Summing
	still := 0
	for polls := 0; polls < 2000 && still < 5; polls++ {
		s := w.Poll(context.Background())
		c := s.Categories[1]
		if c.CompletionTokens != nil {
			if bad := checkTokens(t, root, s); bad != "" || s.TokensSumming != nil {
				t.Fatalf("%s: after %d polls: %s (summing %+v)", step, polls+1, bad, s.TokensSumming)
			}
			return
		}
		if c.TokensSumming == nil {
			t.Fatalf("%s: poll %d: no figure, and not summing", step, polls+1)
		}
		if *c.TokensSumming == last {
			still++
		}
		last = *c.TokensSumming
	}
	t.Fatalf("%s: no figure: %q (%+v) for %d polls, nothing more to sum", step, last.Text(), last, still)
}
