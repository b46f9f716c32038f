package pipeline

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// execCounter counts the commands a watcher runs beside its agent.
type execCounter struct {
	*remote.SSH
	n atomic.Int32
}

func (e *execCounter) Exec(ctx context.Context, argv ...string) (remote.ExecResult, error) {
	e.n.Add(1)
	return e.SSH.Exec(ctx, argv...)
}

// A one-shot status sums the tokens of the files its cold count leaves to
// the host in the same answer, by either agent: its figures are whole and
// no exec follows the answer (it was two round trips more: issue 27's
// status against the habit). A file that grew after the sum is summed
// again after, by that exec.
func TestOnePollSumsTokensInTheColdAnswer(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(27, 5))
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
			if bad := checkTokens(t, root, s); bad != "" {
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
