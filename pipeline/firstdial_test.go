package pipeline

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A dashboard opens its link in the background (remote.Open) and asks
// its first poll at once: that poll reads once the dial ended, up or not.
// It failed at once on a link still dialling, and the table waited for
// the next beat (0.8 s more at 50 ms RTT).
func TestFirstPollWaitsForTheDial(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B1_glaive")
	write(t, filepath.Join(dir, parse.PromptsFile), prompts("B1_glaive", 20))
	write(t, filepath.Join(dir, parse.RawFile), `{"id":"B1_glaive-0","completion_tokens":3}`+"\n")
	sd := sshdtest.Start(t)
	p := newProxied(t, sd)
	p.px.SetDelay(25 * time.Millisecond)
	h, err := remote.Open(context.Background(), remote.Options{Target: sd.User + "@" + p.px.Addr(), Identities: []string{sd.KeyPath}, Home: t.TempDir(),
		Opts: []string{"UserKnownHostsFile=" + p.kh, "StrictHostKeyChecking=yes", "BatchMode=yes"}})
	must(t, err)
	t.Cleanup(func() { h.Close() })
	if ph := h.State().Phase; ph != remote.Connecting {
		t.Fatalf("the link is %v before the first poll: the test needs it dialling", ph)
	}
	w := NewWatcher(h, Options{Host: "dial", Root: root, ServerURL: closedURL(t), WorkerBin: filepath.Join(t.TempDir(), "none")}, nil)
	s := w.Poll(context.Background())
	if s.Connection.State != snapshot.LinkConnected || len(s.Categories) != 1 || s.Categories[0].Done != 1 {
		t.Fatalf("the first poll: link %v, categories %+v", s.Connection.State, s.Categories)
	}
}
