// Package testgate keeps `go test ./...` quick: the slow suites run only
// when their environment variable is set, as .ci/run does.
//
//	SW_E2E=1          end-to-end tests: the built binary, tmux, sshd-backed
//	                  process runs, kill -9 corpora, full-length randomized runs
//	SW_SOAK=3m        the dashboard soak, for that long (30m for the full night)
//	SW_RELIABILITY=1  the long reliability suite
//
// A gated test that runs still needs its tools: under CI=true a missing
// sshd or tmux fails it (see remote/sshdtest), it never skips.
package testgate

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// Environment variables that open the gated suites.
const (
	EnvE2E         = "SW_E2E"
	EnvSoak        = "SW_SOAK"
	EnvReliability = "SW_RELIABILITY"
)

// E2EOn reports whether the end-to-end suite is asked for (SW_E2E=1). The
// reliability suite and the soak are end-to-end too: SW_RELIABILITY=1 or
// SW_SOAK opens what they need.
func E2EOn() bool {
	return os.Getenv(EnvE2E) == "1" || os.Getenv(EnvReliability) == "1" || os.Getenv(EnvSoak) != ""
}

// E2E skips t unless SW_E2E=1.
func E2E(t testing.TB) {
	t.Helper()
	if !E2EOn() {
		t.Skip("end-to-end test: runs with SW_E2E=1 (.ci/run sets it)")
	}
}

// Reliability skips t unless SW_RELIABILITY=1.
func Reliability(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvReliability) != "1" {
		t.Skip("the long reliability suite runs with SW_RELIABILITY=1 (.ci/run sets it)")
	}
}

// Soak returns how long the soak runs (SW_SOAK, a Go duration), or skips t
// when SW_SOAK is unset. A value that is not a duration fails t.
func Soak(t testing.TB) time.Duration {
	t.Helper()
	v := os.Getenv(EnvSoak)
	if v == "" {
		t.Skip("the soak runs with SW_SOAK=3m (30m for the full night; .ci/run sets 3m)")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("SW_SOAK=%q: want a duration such as 3m", v)
	}
	return d
}

// Eventually polls cond every 20 ms until it holds, and fails t with what
// if it does not within d. Use generous deadlines: they bound a hang, they
// are not a measurement.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Tool is the path of the program name a test needs (python3, chromium):
// under CI=true a missing one fails t, elsewhere it skips t, saying why.
func Tool(t testing.TB, name, why string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is needed for %s under CI", name, why)
	}
	t.Skipf("no %s (needed for %s); skipped outside CI", name, why)
	return ""
}
