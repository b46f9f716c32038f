package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A deployed binary that answers --proto and then hangs (a hung mount
// under its reads): the first poll, which may have minutes, gives it
// remote's hello limit, reads the host by the fallback, and the next poll
// does not wait on it again: the fallback reads it (from the adversarial
// review).
func TestColdPollPastAHungBinary(t *testing.T) {
	testgate.E2E(t) // it waits out the hello limit
	s := sshdtest.Start(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	root, url, _ := coldRoot(t)
	bin := filepath.Join(t.TempDir(), "synthwatch")
	must(t, os.WriteFile(bin, []byte("#!/bin/sh\nif [ \"$2\" = --proto ]; then echo "+remote.AgentProto+"; exit 0; fi\nexec sleep 600\n"), 0o755))
	h := p.dial(t)
	t.Cleanup(func() { h.Close() })
	w := NewWatcher(h, Options{Host: "hung", Root: root, ServerURL: url, WorkerBin: bin}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // as a first read's
	defer cancel()
	snap := w.Poll(ctx)
	if len(snap.Categories) != 5 || snap.Connection.Reader != "fallback" {
		t.Fatalf("past a hung binary: %d categories, read by %q: %v", len(snap.Categories), snap.Connection.Reader, w.coldErr)
	}
	if w.agent.Usable() {
		t.Fatal("the hung agent is still to be asked this session")
	}
	if snap := w.Poll(ctx); len(snap.Categories) != 5 || snap.Connection.Reader != "fallback" {
		t.Fatalf("the next poll: %d categories, read by %q", len(snap.Categories), snap.Connection.Reader)
	}
}

// Link() is read beside a poll (the help box, status --follow): it says
// what answered the last poll, never a guess made while one waits.
func TestReaderSteadyBesidePolls(t *testing.T) {
	s := sshdtest.Start(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	root, url, _ := coldRoot(t)
	h := p.dial(t)
	t.Cleanup(func() { h.Close() })
	w := NewWatcher(h, Options{Host: "beside", Root: root, ServerURL: url, WorkerBin: filepath.Join(root, "absent")}, nil)
	if snap := w.Poll(context.Background()); snap.Connection.Reader != "fallback" || snap.Connection.AgentProtocol != "" {
		t.Fatalf("cold poll read by %q, protocol %q", snap.Connection.Reader, snap.Connection.AgentProtocol)
	}
	var stop atomic.Bool
	var mu sync.Mutex
	seen := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			r := w.Link().Reader
			mu.Lock()
			seen[r]++
			mu.Unlock()
		}
	}()
	for range 3 {
		if snap := w.Poll(context.Background()); snap.Connection.Reader != "fallback" {
			t.Fatalf("steady poll read by %q", snap.Connection.Reader)
		}
	}
	stop.Store(true)
	<-done
	if len(seen) != 1 {
		t.Errorf("Link().Reader beside polls all read by the fallback: %v", seen)
	}
}
