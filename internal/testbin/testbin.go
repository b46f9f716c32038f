// Package testbin builds the real synthwatch binary once per test process,
// for tests about processes: signals, kill -9, nohup, SSH launches, tmux.
//
// Such a test is an end-to-end test: Path skips it unless SW_E2E=1 (see
// internal/testgate), so `go test ./...` builds no binary. Benchmarks are
// always asked for by name and are never skipped.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Path builds (once) and returns the synthwatch executable. In a test (not
// a benchmark) it skips unless SW_E2E=1.
func Path(t testing.TB) string {
	t.Helper()
	if _, bench := t.(*testing.B); !bench {
		testgate.E2E(t)
	}
	once.Do(func() {
		dir, e := os.MkdirTemp("", "synthwatch-bin-")
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(dir, "synthwatch")
		out, err = exec.Command("go", "build", "-o", path, "github.com/synthwatch/synthwatch/cmd/synthwatch").CombinedOutput()
	})
	if err != nil {
		t.Fatalf("build synthwatch: %v: %s", err, out)
	}
	return path
}

// Cleanup removes the binary; call it from TestMain after m.Run.
func Cleanup() {
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
}

// Main runs a package's tests and then removes the binary: use it as
// func TestMain(m *testing.M) { testbin.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// RSSMB is a process's resident memory in MB ("self" for this one), -1 if unknown.
func RSSMB(pid string) float64 {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.Atoi(strings.Fields(l)[1])
			return float64(kb) / 1024
		}
	}
	return -1
}

// AgentRuns says whether a Go host agent runs on this machine: a process
// "BIN agent --serve PROTO --skip N NONCE [REQUEST]", with this bin ("" any)
// and this nonce ("" any), as sshd (or a local launcher) started it.
func AgentRuns(bin, nonce string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) >= 7 && (bin == "" || args[0] == bin) && args[1] == "agent" && args[2] == "--serve" && strings.HasPrefix(args[6], "~") && (nonce == "" || args[6] == nonce) {
			return true
		}
	}
	return false
}
