package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// homeServer is an sshd whose sessions see a home of their own (root and
// unshare), where an agent can be installed: under CI=true its absence
// fails the test.
func homeServer(t *testing.T) *sshdtest.Server {
	t.Helper()
	s := sshdtest.Start(t)
	if s.Home() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("the install needs the server's own home (root and unshare)")
		}
		t.Skip("the install needs the server's own home (root and unshare); skipped outside CI")
	}
	return s
}

// A host with no agent: the first polls are read by the fallback, and
// the header's reader says the agent is being installed (with its
// progress); once it is, the next poll is read by the installed Go agent.
// Every poll, before and after, sees the whole root.
func TestFallbackReadsWhileTheAgentInstalls(t *testing.T) {
	s := homeServer(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	root, url, _ := coldRoot(t)
	h := p.dial(t)
	t.Cleanup(func() { h.Close() })
	w := NewWatcher(h, Options{Host: "bare", Root: root, ServerURL: url, WorkerBin: filepath.Join(root, "absent"), InstallAgent: true}, nil)
	snap := w.Poll(context.Background())
	if r := snap.Connection.Reader; len(snap.Categories) != 5 || !strings.HasPrefix(r, "fallback (") || !strings.Contains(r, "installing the agent") && !strings.Contains(r, "the agent is installed at") {
		t.Fatalf("the first poll: %d categories, read by %q", len(snap.Categories), r)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.HasPrefix(snap.Connection.Reader, "go agent ") {
		if time.Now().After(deadline) || strings.Contains(snap.Connection.Reader, "not installed") {
			t.Fatalf("the install: read by %q", snap.Connection.Reader)
		}
		time.Sleep(100 * time.Millisecond)
		if snap = w.Poll(context.Background()); len(snap.Categories) != 5 {
			t.Fatalf("a poll during the install: %d categories, read by %q", len(snap.Categories), snap.Connection.Reader)
		}
	}
	if !strings.Contains(snap.Connection.Reader, ".cache/synthwatch/agent/") {
		t.Errorf("after the install, read by %q, want the installed agent", snap.Connection.Reader)
	}
}
