package remote

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// opts are the ssh-like options a user would give for s: strict host key
// checking against the pinned known_hosts, and the test's key.
func opts(t testing.TB, s *sshdtest.Server, extra ...string) Options {
	t.Helper()
	return Options{
		Target:     s.User + "@" + s.Addr(),
		Identities: []string{s.KeyPath},
		// no ssh-agent of the machine's: the option, not the environment, so tests can run in parallel
		Opts: append([]string{"UserKnownHostsFile=" + s.KnownHosts, "StrictHostKeyChecking=yes", "IdentityAgent=none"}, extra...),
		Home: t.TempDir(),
	}
}

func dial(t testing.TB, o Options) *SSH {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := Dial(ctx, o)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// waitPhase waits until the host reaches phase, or fails after d.
func waitPhase(t testing.TB, h *SSH, phase Phase, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.After(d)
	for {
		if h.State().Phase == phase {
			return time.Since(start)
		}
		select {
		case <-h.Changed():
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("state %v after %s, want %v", h.State(), d, phase)
		}
	}
}

// waitDropped waits until h has lost a live link more than drops times,
// or fails after d. A reset link is redialled at once: its Reconnecting
// phase can be over before a waiter looks, its count of drops cannot.
func waitDropped(t testing.TB, h *SSH, drops int, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for h.State().Drops <= drops {
		select {
		case <-h.Changed():
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("state %v after %s: still %d drops, want more", h.State(), d, h.State().Drops)
		}
	}
}

// leftAfter is what goleak still finds after d, asked until it finds
// nothing: its own retries end within about half a second, and a loaded
// host can take longer to send a killed command's exit status.
func leftAfter(d time.Duration, opts ...goleak.Option) error {
	deadline := time.Now().Add(d)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func wcL(t testing.TB, path string) int64 {
	t.Helper()
	out, err := exec.Command("sh", "-c", "wc -l < "+Quote(path)).Output()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(string(trimNL(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	return b
}

func writeFile(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
