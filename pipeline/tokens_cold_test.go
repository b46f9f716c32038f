package pipeline

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/counts"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// execCounter counts the commands a watcher runs beside its agent.
type execCounter struct {
	*remote.SSH
	n atomic.Int32
}

// countedHost is a fresh sshd's host through a proxy, its execs counted.
func countedHost(t *testing.T) *execCounter {
	h := &execCounter{SSH: newProxied(t, sshdtest.Start(t)).dial(t)}
	t.Cleanup(func() { h.Close() })
	return h
}

func (e *execCounter) Exec(ctx context.Context, argv ...string) (remote.ExecResult, error) {
	e.n.Add(1)
	return e.SSH.Exec(ctx, argv...)
}

// tokenRoot is three categories written as Python writes them (40, 3,000
// and 2,500 records), the last two bigger than a count reads over the link.
func tokenRoot(t *testing.T, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(27, seed))
	root := t.TempDir()
	for _, c := range []struct {
		name string
		n    int
	}{{"B1_glaive", 40}, {"B2 open code", 3000}, {"B3_magicoder", 2500}} {
		dir := filepath.Join(root, "prepared", c.name)
		write(t, filepath.Join(dir, parse.PromptsFile), prompts(c.name, 10000))
		write(t, filepath.Join(dir, parse.RawFile), pyTokenRecords(c.name, 0, c.n, rng))
	}
	if fi, _ := os.Stat(filepath.Join(root, "prepared", "B3_magicoder", parse.RawFile)); fi.Size() <= remote.NewCounter("").RemoteAbove {
		t.Fatalf("B3 must be counted on the host: %d bytes", fi.Size())
	}
	return root
}

// A one-shot status through the Go agent sums the tokens of the files its
// cold count leaves to the host in the same answer: its figures are whole
// and no exec follows the answer (it was two round trips more: issue 27's
// status against the habit). By the fallback it counts only: those files'
// tokens would be the host's awk over every byte (83 s for a gigabyte
// under gawk), so they are no figure (null, the total partial), never a
// wrong one, and the files it read over the link are tallied.
func TestOnePollSumsTokensInTheColdAnswer(t *testing.T) {
	t.Parallel()
	root := tokenRoot(t, 5)
	sd := sshdtest.Start(t)
	p := newProxied(t, sd)
	for _, agent := range []string{"fallback", "go"} {
		t.Run("agent "+agent, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "no-synthwatch")
			if agent == "go" {
				bin = testbin.Path(t)
			}
			h := &execCounter{SSH: p.dial(t)}
			t.Cleanup(func() { h.Close() })
			w := NewWatcher(h, Options{Host: "once", Root: root, ServerURL: closedURL(t), WorkerBin: bin, OnePoll: true}, nil)
			s := w.Poll(context.Background())
			if agent == "fallback" {
				for _, c := range s.Categories {
					fi, _ := os.Stat(filepath.Join(root, "prepared", c.Name, parse.RawFile))
					tok, _ := jsonTruth(t, filepath.Join(root, "prepared", c.Name, parse.RawFile))
					onHost := fi.Size() > remote.NewCounter("").RemoteAbove
					switch {
					case onHost && c.CompletionTokens != nil:
						t.Errorf("%s: %d tokens by the fallback's one poll: it counts only", c.Name, *c.CompletionTokens)
					case !onHost && (c.CompletionTokens == nil || *c.CompletionTokens != tok):
						t.Errorf("%s, read over the link: tokens %v, the file %d", c.Name, c.CompletionTokens, tok)
					}
				}
				if !s.TokensPartial {
					t.Errorf("the total claims to be whole without the big files' tokens")
				}
			} else if bad := checkTokens(t, root, s); bad != "" {
				t.Fatalf("one poll: %s", bad)
			}
			want := int32(0) // the fallback is its own one exec
			if agent == "fallback" {
				want = 1
			}
			if n := h.n.Load(); n != want {
				t.Fatalf("%d execs beside the agent's answer, want %d (read by %q)", n, want, s.Connection.Reader)
			}
		})
	}
}

// A dashboard's first poll through the Go agent shows every category's
// count at once and does not wait for the tokens of the files its count
// left to the host (a night written while no dashboard watched would be
// summed from its last kept offset before the first table); the next poll
// sums them in the agent's answer, no exec beside it.
func TestDashboardCountsFirstTokensNext(t *testing.T) {
	t.Parallel()
	root := tokenRoot(t, 6)
	h := countedHost(t)
	w := NewWatcher(h, Options{Host: "dash", Root: root, ServerURL: closedURL(t), WorkerBin: testbin.Path(t)}, nil)
	s := w.Poll(context.Background())
	if !strings.HasPrefix(s.Connection.Reader, "go agent") {
		t.Fatalf("read by %q", s.Connection.Reader)
	}
	want := map[string]int64{"B1_glaive": 40, "B2 open code": 3000, "B3_magicoder": 2500}
	for _, c := range s.Categories {
		if c.Done != want[c.Name] {
			t.Errorf("the first table: %s done %d, want %d", c.Name, c.Done, want[c.Name])
		}
		if c.Name == "B3_magicoder" && c.CompletionTokens != nil {
			t.Errorf("the first poll summed %s's tokens before the first table", c.Name)
		}
	}
	if !s.TokensPartial {
		t.Error("the first table's total claims to be whole")
	}
	s = w.Poll(context.Background())
	if bad := checkTokens(t, root, s); bad != "" || s.TokensPartial {
		t.Fatalf("the next poll: %s (total partial: %v)", bad, s.TokensPartial)
	}
	if n := h.n.Load(); n != 0 {
		t.Fatalf("%d execs beside the agent's answers, want none", n)
	}
}

// The dashboard read by the fallback sums a big file's tokens a slice a
// poll (counts.FallbackSumPerPoll), never the whole gigabyte in one poll's awk:
// the figure is none until the last slice, then the file's own.
func TestFallbackSumsABigFileASliceAPoll(t *testing.T) {
	t.Parallel()
	root, dir, all := bigRoot(t, 100000, 3*counts.FallbackSumPerPoll>>20, rand.New(rand.NewPCG(37, 7)))
	h := newProxied(t, sshdtest.Start(t)).dial(t)
	t.Cleanup(func() { h.Close() })
	w := NewWatcher(h, Options{Host: "fb", Root: root, ServerURL: closedURL(t), WorkerBin: filepath.Join(t.TempDir(), "none")}, nil)
	want, _ := jsonTruth(t, filepath.Join(dir, parse.RawFile))
	polls := 0
	for ; polls < 10; polls++ {
		s := w.Poll(context.Background())
		if !strings.HasPrefix(s.Connection.Reader, "fallback") {
			t.Fatalf("read by %q", s.Connection.Reader)
		}
		c := s.Categories[0]
		if c.CompletionTokens == nil {
			if !s.TokensPartial {
				t.Fatal("no figure, and the total says whole")
			}
			continue
		}
		if *c.CompletionTokens != want {
			t.Fatalf("poll %d: %d tokens, the file holds %d", polls+1, *c.CompletionTokens, want)
		}
		break
	}
	if polls < 2 || polls >= 10 {
		t.Fatalf("the figure came after %d polls: want the %d MB in slices of %d MB", polls+1, len(all)>>20, counts.FallbackSumPerPoll>>20)
	}
}

// A dashboard (its time budget set) has its first table's tokens in its
// first answer when the agent read the root before (its kept sums), and
// on first contact once the agent summed them (within
// counts.FirstSumWithin on a quiet host). No exec beside the agent's
// answers, no "summing" left.
func TestDashboardFirstTableHasItsTokens(t *testing.T) {
	t.Parallel()
	root := tokenRoot(t, 8)
	h := countedHost(t)
	for _, run := range []string{"first contact", "the agent read it before"} {
		w := NewWatcher(h, Options{Host: "dash", Root: root, ServerURL: closedURL(t), WorkerBin: testbin.Path(t), SumWithin: SumWithin}, nil)
		s := w.Poll(context.Background())
		if !strings.HasPrefix(s.Connection.Reader, "go agent") {
			t.Fatalf("%s: read by %q", run, s.Connection.Reader)
		}
		// first contact: within the budget on a quiet host; a loaded one
		// may say "summing" first, never a wrong figure
		for polls := 0; run == "first contact" && s.TokensPartial && polls < 50; polls++ {
			s = w.Poll(context.Background())
		}
		if bad := checkTokens(t, root, s); bad != "" || s.TokensPartial || s.TokensSumming != nil {
			t.Fatalf("%s: the first table: %s (partial %v, summing %+v)", run, bad, s.TokensPartial, s.TokensSumming)
		}
	}
	if n := h.n.Load(); n != 0 {
		t.Fatalf("%d execs beside the agent's answers, want none", n)
	}
}

// A night the agent never summed, past the first poll's budget: the first
// table has every count, its big file's tokens say how far they are
// summed (never a figure short of the file's), and the polls after sum on
// to Python's json module's figures.
func TestDashboardFirstTableSumsPastItsBudget(t *testing.T) {
	t.Parallel()
	root, _, all := bigRoot(t, 10, 24, rand.New(rand.NewPCG(41, 3)))
	h := newProxied(t, sshdtest.Start(t)).dial(t)
	t.Cleanup(func() { h.Close() })
	w := NewWatcher(h, Options{Host: "dash", Root: root, ServerURL: closedURL(t), WorkerBin: testbin.Path(t), SumWithin: 2 * time.Millisecond}, nil)
	s := w.Poll(context.Background())
	if !strings.HasPrefix(s.Connection.Reader, "go agent") || len(s.Categories) != 1 {
		t.Fatalf("read by %q: %d categories", s.Connection.Reader, len(s.Categories))
	}
	c := s.Categories[0]
	if c.Done != int64(strings.Count(all, "\n")) {
		t.Fatalf("the first table's count %d, want %d", c.Done, strings.Count(all, "\n"))
	}
	if c.CompletionTokens != nil || c.TokensSumming == nil || !s.TokensPartial {
		t.Fatalf("a 24 MB night in 2 ms: tokens %v, summing %+v, partial %v", c.CompletionTokens, c.TokensSumming, s.TokensPartial)
	}
	for polls := 0; s.TokensPartial && polls < 200; polls++ {
		s = w.Poll(context.Background())
	}
	if bad := checkTokens(t, root, s); bad != "" || s.TokensPartial {
		t.Fatalf("after the polls: %s (partial %v)", bad, s.TokensPartial)
	}
}

// bigRoot is one category, B2_big, of n prompts and mb MB or more of
// records as Python writes them: the root, its folder and its records.
func bigRoot(t *testing.T, n, mb int, rng *rand.Rand) (root, dir, all string) {
	t.Helper()
	root = t.TempDir()
	dir = filepath.Join(root, "prepared", "B2_big")
	write(t, filepath.Join(dir, parse.PromptsFile), prompts("B2_big", n))
	all = bigRaw("B2_big", 0, mb, rng)
	write(t, filepath.Join(dir, parse.RawFile), all)
	return root, dir, all
}
