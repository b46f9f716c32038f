package remote

import (
	"net"
	"os"
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
