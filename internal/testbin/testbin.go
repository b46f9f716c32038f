// Package testbin builds the real synthwatch binary once per test process,
// for tests about processes: signals, kill -9, nohup, SSH launches, tmux.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Path builds (once) and returns the synthwatch executable.
func Path(t testing.TB) string {
	t.Helper()
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
