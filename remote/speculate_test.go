package remote

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// proxied is o aimed at a counting forwarder to s, the host's key pinned
// at the forwarder's port.
func proxied(t *testing.T, s *sshdtest.Server, o Options) (Options, *countAccepts) {
	t.Helper()
	c := listenCounting(t, "127.0.0.1:0", forwardTo(s.Addr()))
	port := c.ln.Addr().(*net.TCPAddr).Port
	kh := filepath.Join(t.TempDir(), "known_hosts")
	b, err := os.ReadFile(s.KnownHosts)
	must(t, err)
	writeFile(t, kh, strings.ReplaceAll(string(b), strconv.Itoa(s.Port), strconv.Itoa(port)))
	o.Opts[0] = "UserKnownHostsFile=" + kh
	o.Target = s.User + "@127.0.0.1:" + strconv.Itoa(port)
	return o, c
}

// connections waits for a second connection a moment, then counts them.
func connections(c *countAccepts) int32 {
	time.Sleep(200 * time.Millisecond)
	return c.accepts.Load()
}

// The handshake begins beside ssh -G on the config the parser reads, and
// when ssh -G says the same of everything the handshake reads, it is the
// link: one connection to the host, and commands run on it.
func TestHandshakeBesideSSHG(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	o, c := proxied(t, s, opts(t, s))
	h := dial(t, o)
	if !h.speculated {
		t.Fatalf("the parser's config (%+v) was not taken: ssh -G's is %+v", mustGuess(t, o), h.cfg)
	}
	if r, err := h.Exec(t.Context(), "echo", "ok"); err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("exec on the link begun beside ssh -G: %v %q", err, r.Stdout)
	}
	if n := connections(c); n != 1 {
		t.Fatalf("the host got %d connections, want 1", n)
	}
}

func mustGuess(t *testing.T, o Options) Config {
	o.SSHBinary = "none"
	c, err := Resolve(t.Context(), o)
	must(t, err)
	return c
}

// Where ssh -G resolves another config than the parser (here: a -i file
// that is not there, which ssh drops and the parser keeps), the handshake
// begun on the parser's is dropped at the host key and the link is
// dialled on ssh -G's.
func TestHandshakeOnSSHGsConfigWhenTheyDiffer(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	o, c := proxied(t, s, opts(t, s))
	o.Identities = append(o.Identities, filepath.Join(t.TempDir(), "no-such-key"))
	h := dial(t, o)
	if h.speculated {
		t.Fatal("the parser's config was taken though ssh -G resolved another")
	}
	if r, err := h.Exec(t.Context(), "echo", "ok"); err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("exec: %v %q", err, r.Stdout)
	}
	if n := connections(c); n != 2 {
		t.Fatalf("the host got %d connections, want 2: the dropped handshake's and the link's", n)
	}
}

// countingPrompt confirms every host key and counts the questions.
type countingPrompt struct{ asked atomic.Int32 }

func (p *countingPrompt) ConfirmHostKey(string, string, string) (bool, error) {
	p.asked.Add(1)
	return true, nil
}
func (p *countingPrompt) Passphrase(string) ([]byte, error) {
	p.asked.Add(1)
	return nil, os.ErrNotExist
}

// The handshake begun beside ssh -G never asks the user: a host key to
// confirm ends it, and the dial after it asks, once.
func TestHandshakeBesideSSHGAsksNothing(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	o, _ := proxied(t, s, opts(t, s))
	o.Opts[0] = "UserKnownHostsFile=" + filepath.Join(t.TempDir(), "empty_known_hosts")
	o.Opts[1] = "StrictHostKeyChecking=ask"
	p := &countingPrompt{}
	o.Prompt = p
	h := dial(t, o)
	if h.speculated {
		t.Fatal("a link that needed the user's word was the speculation's")
	}
	if n := p.asked.Load(); n != 1 {
		t.Fatalf("the user was asked %d times, want once", n)
	}
}

// A pre-dial slower than ssh -G, and a config ssh -G resolves otherwise:
// the dial after the speculation does not take the connection the
// speculation may yet take (one connection each, never one for two).
func TestSpeculationAndTheDialNeverShareAConnection(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	o, _ := proxied(t, s, opts(t, s))
	o.Identities = append(o.Identities, filepath.Join(t.TempDir(), "no-such-key"))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	guess := mustGuess(t, o)
	pre := &preDial{addr: guess.Addr(), done: make(chan struct{})}
	sp := speculate(ctx, o, pre)
	if sp == nil {
		t.Fatal("no speculation")
	}
	h, err := newSSH(ctx, o)
	must(t, err)
	go func() {
		time.Sleep(300 * time.Millisecond) // the connect ends after ssh -G
		pre.conn, pre.err = net.Dial("tcp", guess.Addr())
		close(pre.done)
	}()
	sess, err := h.dialFirst(ctx, pre, sp)
	if err != nil {
		t.Fatalf("the dial after a dropped speculation: %v", err)
	}
	defer sess.link.client.Close()
	if _, err := startExec(sess.link.client, []string{"true"}, false, false); err != nil {
		t.Fatalf("a channel on the link: %v", err)
	}
	pre.drop()
}

// ssh -G slower than the handshake's ConnectTimeout (a Match exec, a
// loaded laptop): the speculation's wait for it is not the handshake's
// time, and the dial succeeds as it does without the speculation.
func TestSpeculationWaitsForASlowSSHG(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	o, _ := proxied(t, s, opts(t, s, "ConnectTimeout=1"))
	real, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatal(err)
	}
	o.SSHBinary = filepath.Join(t.TempDir(), "slow-ssh")
	writeFile(t, o.SSHBinary, "#!/bin/sh\nsleep 2\nexec "+real+" \"$@\"\n")
	must(t, os.Chmod(o.SSHBinary, 0o755))
	h := dial(t, o)
	if !h.speculated {
		t.Fatal("the speculation did not hold through a slow ssh -G")
	}
}

// Closing the dashboard's link while its first connect waits on a host
// that accepts and says nothing ends the speculation's connection at the
// close, not at the handshake's timeout (a minute here).
func TestCloseEndsTheFirstConnectsSpeculation(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	o := opts(t, s, "ConnectTimeout=60")
	closed := make(chan struct{}, 4)
	c := listenCounting(t, "127.0.0.1:0", func(_ *countAccepts, conn net.Conn) {
		b := make([]byte, 4096)
		for {
			if _, err := conn.Read(b); err != nil {
				conn.Close()
				closed <- struct{}{}
				return
			}
		}
	})
	o.Target = s.User + "@" + c.ln.Addr().String()
	h, err := Open(t.Context(), o)
	must(t, err)
	for deadline := time.Now().Add(10 * time.Second); c.accepts.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	h.Close()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the first connect's connection outlived Close by 30 s")
	}
}
