package pipeline

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// bigRaw is n MB or more of records as Python writes them, ids from k.
func bigRaw(cat string, k, mb int, rng *rand.Rand) string {
	var all strings.Builder
	for ; all.Len() < mb<<20; k += 200 {
		all.WriteString(pyTokenRecords(cat, k, 200, rng))
	}
	return all.String()
}

// The dashboard (Options.SumWithin) sums a big file's tokens a time
// budget an answer: its first table has the counts and the category
// "summing" from 0; each poll after it says how far the agent got (the
// category's bytes summed and the Snapshot's, growing, Resume: the next
// poll is asked at once), never a figure before the whole is summed; then the
// figure, the file's own. A file replaced between two cut answers is
// summed again from 0, to the new file's figure.
func TestDashboardSumsWithinShowsProgress(t *testing.T) {
	t.Parallel()
	sd := sshdtest.Start(t)
	p := newProxied(t, sd)
	for _, how := range []string{"as it is", "replaced"} {
		t.Run(how, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(41, 9))
			root, raw := summingRoot(t, rng)
			h := p.dial(t)
			t.Cleanup(func() { h.Close() })
			w := NewWatcher(h, Options{Host: "dash", Root: root, ServerURL: closedURL(t), WorkerBin: testbin.Path(t), SumWithin: 2 * time.Millisecond}, nil)
			// the first answer, cut by the budget
			firstTableSums(t, w.Poll(context.Background()), fileSize(t, raw))
			if how == "replaced" {
				// between two cut answers: summed again from 0
				write(t, raw+".new", bigRaw("B2_big", 500000, 12, rng))
				must(t, os.Rename(raw+".new", raw))
			}
			from := int64(0) // summed past it each poll
			if how == "replaced" {
				from = -1 // the poll that finds the new file counts it: its sum from 0 the next
			}
			s, cuts := pollSumming(t, w, from)
			if bad := checkTokens(t, root, s); bad != "" || s.TokensSumming != nil || s.Categories[1].TokensSumming != nil {
				t.Fatalf("the figure: %s (still summing: %+v)", bad, s.TokensSumming)
			}
			t.Logf("%d polls summing after the first table, before the figure", cuts)
			if how == "replaced" && cuts < 1 {
				t.Fatalf("%d answers cut by a 2 ms budget: the budget was not kept", cuts)
			}
		})
	}
}

// firstTableSums checks a first table: the big category has no figure
// yet, and is summing, short of its size (its first poll summed within
// the budget: counts.FirstSumWithin), as the total is.
func firstTableSums(t *testing.T, s snapshot.Snapshot, size int64) {
	t.Helper()
	if c := s.Categories[1]; c.Name != "B2_big" || c.CompletionTokens != nil || c.TokensSumming == nil || c.TokensSumming.Done >= size || c.TokensSumming.Total != size {
		t.Fatalf("the first table: %s tokens %v, summing %+v; want none yet, short of %d bytes summed", c.Name, c.CompletionTokens, c.TokensSumming, size)
	}
	if s.TokensSumming == nil || *s.TokensSumming != *s.Categories[1].TokensSumming || !s.TokensPartial {
		t.Fatalf("the first table's total: summing %+v, partial %v", s.TokensSumming, s.TokensPartial)
	}
}

// summingRoot is a small category read over the link and a 16 MB one
// counted on the host, written as Python writes them.
func summingRoot(t *testing.T, rng *rand.Rand) (root, raw string) {
	root = t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1_small", parse.PromptsFile), prompts("B1_small", 100))
	write(t, filepath.Join(root, "prepared", "B1_small", parse.RawFile), pyTokenRecords("B1_small", 0, 30, rng))
	raw = filepath.Join(root, "prepared", "B2_big", parse.RawFile)
	write(t, filepath.Join(root, "prepared", "B2_big", parse.PromptsFile), prompts("B2_big", 10))
	write(t, raw, bigRaw("B2_big", 0, 16, rng))
	return root, raw
}

// pollSumming polls w until its second category has a figure: before it,
// each poll's is summing further, past byte done, as the agent's cut
// answer asks the next poll at once. It returns
// the snapshot with the figure, and the polls summing before it.
func pollSumming(t *testing.T, w *Watcher, done int64) (snapshot.Snapshot, int) {
	t.Helper()
	for cuts := 0; cuts < 2000; cuts++ {
		s := w.Poll(context.Background())
		c := s.Categories[1]
		if c.CompletionTokens != nil {
			return s, cuts
		}
		sum := c.TokensSumming
		if sum == nil || !sum.Resume || sum.Done <= done || sum.Done >= sum.Total || s.TokensSumming == nil || *s.TokensSumming != *sum {
			t.Fatalf("poll %d: summing %+v (the total's %+v), want the agent's cut answer past byte %d", cuts+2, sum, s.TokensSumming, done)
		}
		done = sum.Done
	}
	t.Fatal("the figure never came")
	return snapshot.Snapshot{}, 0
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	must(t, err)
	return fi.Size()
}

// A category with a token budget is done or not by its tokens: the
// dashboard's first table sums them whole, past its time budget, so it
// says done where status does (the crossview test's cap and budget), even
// when the agent's first answer was cut; the agent sums the rest, in the
// same poll, not the host's awk.
func TestDashboardFirstTableSumsABudgetWhole(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 11))
	root, raw := summingRoot(t, rng)
	write(t, filepath.Join(root, "prepared", "B3_big", parse.PromptsFile), prompts("B3_big", 10))
	write(t, filepath.Join(root, "prepared", "B3_big", parse.RawFile), bigRaw("B3_big", 0, 16, rng))
	write(t, filepath.Join(root, "pipeline.toml"), "[classes.LONG]\n[[categories]]\nname = \"B1_small\"\nclass = \"LONG\"\n[[categories]]\nname = \"B2_big\"\nclass = \"LONG\"\ntoken_budget = 1000\n[[categories]]\nname = \"B3_big\"\nclass = \"LONG\"\n")
	h := countedHost(t)
	w := NewWatcher(h, Options{Host: "dash", Root: root, ServerURL: closedURL(t), WorkerBin: testbin.Path(t), SumWithin: 2 * time.Millisecond}, nil)
	s := w.Poll(context.Background())
	if n := h.n.Load(); n != 0 || !strings.HasPrefix(s.Connection.Reader, "go agent") {
		t.Fatalf("read by %q, %d execs beside the agent's answers: the whole sum is the agent's, not the host's awk", s.Connection.Reader, n)
	}
	c := s.Categories[1]
	if c.Name != "B2_big" || c.CompletionTokens == nil || c.TokensSumming != nil {
		t.Fatalf("the first table: %s tokens %v, summing %+v (of %d bytes); want its whole figure", c.Name, c.CompletionTokens, c.TokensSumming, fileSize(t, raw))
	}
	if c.State != snapshot.StateDone || *c.CompletionTokens < c.TokenBudget {
		t.Fatalf("the first table: %s %s at %d tokens of a %d budget, want done", c.Name, c.State, *c.CompletionTokens, c.TokenBudget)
	}
	// a category with no budget keeps the first answer's part, as any
	// first table does: summing, past 0
	if c := s.Categories[2]; c.Name != "B3_big" || c.CompletionTokens == nil && (c.TokensSumming == nil || c.TokensSumming.Done == 0) {
		t.Fatalf("the first table: %s tokens %v, summing %+v; want how far the first answer summed", c.Name, c.CompletionTokens, c.TokensSumming)
	}
	for polls := 0; s.TokensPartial && polls < 200; polls++ {
		s = w.Poll(context.Background())
	}
	if bad := checkTokens(t, root, s); bad != "" || s.TokensPartial {
		t.Fatalf("after the polls: %s (partial %v)", bad, s.TokensPartial)
	}
}
