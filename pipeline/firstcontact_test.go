package pipeline

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A first contact (no servers hint) asks the agent's launcher and the
// fallback at once. Once the agent has answered, the fallback's exec is
// ended: its channel closed, its script cut at its next write. It is not
// left to read every category on the host for nothing (a review found
// 2,000 categories still being read 13.8 s after the poll, its answer
// crossing the link to be dropped). Counted in bytes, not seconds: what
// a first contact moves, less what the agent's own poll moves, is a small
// part of the fallback's whole answer.
func TestFirstContactEndsTheFallbackOnceTheAgentAnswers(t *testing.T) {
	bin := testbin.Path(t)
	root := t.TempDir()
	for i := range 1000 {
		n := fmt.Sprintf("C%04d", i)
		write(t, filepath.Join(root, "prepared", n, parse.PromptsFile), prompts(n, 3))
		write(t, filepath.Join(root, "prepared", n, parse.RawFile), records(n, 0, 2))
	}
	s := sshdtest.Start(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	received := func(worker, hint string) int64 {
		t.Helper()
		h := p.dial(t)
		defer h.Close()
		o := Options{Host: "h", Root: root, ServerURL: closedURL(t), WorkerBin: worker, OnePoll: true, HintPath: filepath.Join(t.TempDir(), "hint.json")}
		if hint != "" {
			write(t, o.HintPath, hint)
		}
		before := h.Wire().Received
		snap := NewWatcher(h, o, nil).Poll(context.Background())
		if len(snap.Categories) != 1000 {
			t.Fatalf("%d categories read by %q", len(snap.Categories), snap.Connection.Reader)
		}
		// until the host runs no fallback (bounded: its whole read ends)
		for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if out, _ := exec.Command("pgrep", "-f", "synthwatch-batch").Output(); len(strings.TrimSpace(string(out))) == 0 {
				break
			}
		}
		return h.Wire().Received - before
	}
	none := filepath.Join(t.TempDir(), "no-synthwatch")
	fallback := received(none, `{"no_agent":"`+remote.AgentProto+`","unpacks":true}`) // the fallback's whole answer
	agent := received(bin, `{"unpacks":true}`)                                        // the agent alone
	first := received(bin, "")                                                        // both at once
	t.Logf("received: fallback %d, agent %d, first contact %d bytes", fallback, agent, first)
	if first-agent > fallback/2 {
		t.Fatalf("a first contact the agent answered moved %d bytes more than the agent alone: the fallback's whole answer is %d", first-agent, fallback)
	}
}
