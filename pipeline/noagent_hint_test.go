package pipeline

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A host that had no agent of this protocol is remembered in the hint, and
// the next cold start reads by the fallback beside the launcher rather
// than after its "none here": the same figures, by the fallback. Once an
// agent answers (here: the binary as worker_bin), its answer is the one
// taken and the hint forgets "none".
func TestNoAgentHintReadsBesideTheLauncher(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B1_glaive")
	write(t, filepath.Join(dir, parse.PromptsFile), prompts("B1_glaive", 100))
	write(t, filepath.Join(dir, parse.RawFile), pyTokenRecords("B1_glaive", 0, 40, rng))
	hint := filepath.Join(t.TempDir(), "h.servers.json")
	p := newProxied(t, sshdtest.Start(t))
	status := func(bin string) snapshot.Snapshot {
		h := p.dial(t)
		defer h.Close()
		w := NewWatcher(h, Options{Host: "h", Root: root, ServerURL: closedURL(t), WorkerBin: bin, OnePoll: true, HintPath: hint}, nil)
		return w.Poll(context.Background())
	}
	none := filepath.Join(t.TempDir(), "no-synthwatch")
	first := status(none)
	if h := ReadServersHint(hint); h == nil || h.NoAgent != remote.AgentProto {
		t.Fatalf("no agent, and the hint says %+v", h)
	}
	second := status(none) // the hint: the fallback beside the launcher
	if !strings.HasPrefix(second.Connection.Reader, "fallback") || second.Categories[0].Done != first.Categories[0].Done || second.Categories[0].Done != 40 {
		t.Fatalf("with the hint: read by %q, %d done (first %d)", second.Connection.Reader, second.Categories[0].Done, first.Categories[0].Done)
	}
	third := status(testbin.Path(t)) // an agent now answers: its answer is taken
	if !strings.HasPrefix(third.Connection.Reader, "go agent") || third.Categories[0].Done != 40 {
		t.Fatalf("an agent beside a stale hint: read by %q, %d done", third.Connection.Reader, third.Categories[0].Done)
	}
	if h := ReadServersHint(hint); h == nil || h.NoAgent != "" {
		t.Fatalf("the agent answered, and the hint still says %+v", h)
	}
}
