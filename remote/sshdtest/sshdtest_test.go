package sshdtest

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func dial(t *testing.T, s *Server, knownHostsFile string) (*ssh.Client, error) {
	t.Helper()
	pem, err := os.ReadFile(s.KeyPath)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := knownhosts.New(knownHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	return ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: cb,
		Timeout:         5 * time.Second,
	})
}

// The helper is proven by the two things every later test needs: a command
// over exec and a file over SFTP, with strict host-key checking.
func TestRealSSHDExecAndSFTP(t *testing.T) {
	s := Start(t)
	c, err := dial(t, s, s.KnownHosts)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()

	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := sess.Output("echo ok")
	sess.Close()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("echo ok: %q %v", out, err)
	}

	path := filepath.Join(t.TempDir(), "raw_responses.jsonl")
	if err := os.WriteFile(path, []byte("{\"id\":1}\n{\"id\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := sftp.NewClient(c)
	if err != nil {
		t.Fatalf("sftp: %v", err)
	}
	defer sc.Close()
	f, err := sc.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(data) != "{\"id\":1}\n{\"id\":2}\n" {
		t.Fatalf("sftp read %q %v", data, err)
	}
}

// A known_hosts that pins another key must refuse the server.
func TestRealSSHDRefusesOtherHostKey(t *testing.T) {
	s := Start(t)
	other := Start(t)
	wrong := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(s.Addr())}, other.HostKey)
	if err := os.WriteFile(wrong, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := dial(t, s, wrong)
	if err == nil || !strings.Contains(err.Error(), "key mismatch") {
		t.Fatalf("want a host key mismatch, got %v", err)
	}
}

func TestRestart(t *testing.T) {
	s := Start(t)
	port := s.Port
	s.Restart()
	if s.Port != port {
		t.Fatalf("port moved %d -> %d", port, s.Port)
	}
	c, err := dial(t, s, s.KnownHosts)
	if err != nil {
		t.Fatalf("dial after restart: %v", err)
	}
	c.Close()
}

// Stopping sshd lets a session's shell run its exit trap, as rc files that
// take a lock (pyenv's rehash) need: killed outright, the lock stays and
// every later shell waits on it.
func TestStopLetsSessionsCleanUp(t *testing.T) {
	s := Start(t)
	c, err := dial(t, s, s.KnownHosts)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	lock := filepath.Join(t.TempDir(), "lock")
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	script := "echo held > " + lock + "; trap 'rm -f " + lock + "' EXIT; while :; do sleep 0.1; done"
	if err := sess.Start("bash -c \"" + script + "\""); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(lock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session never took its lock")
		}
	}
	s.Stop()
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("the session's lock outlived sshd's stop (%v): its shell was killed before its exit trap", err)
	}
}

// Dropbear as users' minimal hosts run it: a command over exec with the
// pinned host key, stopped and started again on its port, and its limit
// that the product must live with: a command line of 10 KB ends the
// connection ("String too long").
func TestDropbearExecAndItsLimit(t *testing.T) {
	s := StartDropbear(t)
	c, err := dial(t, s, s.KnownHosts)
	if err != nil {
		t.Fatalf("dial dropbear: %v\n%s", err, s.Log())
	}
	sess, _ := c.NewSession()
	out, err := sess.Output("echo hi-from-dropbear")
	if err != nil || strings.TrimSpace(string(out)) != "hi-from-dropbear" {
		t.Fatalf("exec: %q %v\n%s", out, err, s.Log())
	}
	sess, _ = c.NewSession()
	if out, err := sess.Output("true " + strings.Repeat("x", 10<<10)); err == nil {
		t.Fatalf("dropbear ran a 10 KB command line (%q): the limit this test documents is gone", out)
	}
	c.Close()
	s.Restart()
	c, err = dial(t, s, s.KnownHosts)
	if err != nil {
		t.Fatalf("dial after restart: %v", err)
	}
	c.Close()
}

// A session's home is the server's clean one (as root): no rc file of the
// user's runs, so none can slow or break a test; the real home is untouched.
func TestSessionsSeeACleanHome(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root, where sessions get a clean home")
		}
		t.Skip("a clean home needs root (a mount namespace); skipped outside CI")
	}
	for name, start := range map[string]func(testing.TB) *Server{"openssh": func(t testing.TB) *Server { return Start(t) }, "dropbear": func(t testing.TB) *Server { return StartDropbear(t) }} {
		t.Run(name, func(t *testing.T) {
			s := start(t)
			c, err := dial(t, s, s.KnownHosts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sess, _ := c.NewSession()
			out, err := sess.Output(`ls -A "$HOME" | grep -v '^\.ssh$'; echo end`)
			if err != nil || string(out) != "end\n" {
				t.Fatalf("the session's home holds %q (%v)", out, err)
			}
		})
	}
}
