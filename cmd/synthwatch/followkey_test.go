package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A host whose key changed while status --follow watched it: the link
// cannot come back, and the exit is 4, as one-shot status's for the same
// host (TestExitCodes), not 3.
func TestFollowChangedHostKeyExits4(t *testing.T) {
	testgate.E2E(t)
	s := sshdtest.Start(t)
	other := sshdtest.Start(t)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "prepared", "B1"), 0o755)
	os.WriteFile(filepath.Join(root, "prepared", "B1", "prompts.jsonl"), []byte(`{"id":1,"messages":[]}`+"\n"), 0o644)
	f := startFollower(t, "-F", "/dev/null", "-i", s.KeyPath, "-o", "UserKnownHostsFile="+s.KnownHosts, "-o", "StrictHostKeyChecking=yes",
		"--poll", "300ms", "--root", root, "--server-url", "http://127.0.0.1:1", s.User+"@"+s.Addr())
	if snap := f.next(60 * time.Second); snap.Connection.State != "connected" {
		t.Fatalf("first line: connection %s", snap.Connection.State)
	}
	// the host is reinstalled: its sshd comes back on the same port with another key
	key, err := os.ReadFile(filepath.Join(other.Dir, "host_ed25519"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "host_ed25519"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	done := make(chan error, 1)
	go func() {
		for range f.lines { // the stale lines while it tries again
		}
		done <- f.cmd.Wait()
	}()
	select {
	case err = <-done:
	case <-time.After(90 * time.Second): // generous: a bound on a hang, not a speed
		t.Fatal("status --follow still runs 90 s after the host's key changed")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitHostKey {
		t.Errorf("exit %v, want %d", err, exitHostKey)
	}
}
