// Package testbin builds the real synthwatch binary once per test process,
// for tests about processes: signals, kill -9, nohup, SSH launches, tmux.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
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
