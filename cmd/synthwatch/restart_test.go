package main

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote"
)

// restart refuses a process that only writes a category file unless its
// pid is given, then says what it stopped; status prints "(by you)" after
// our kill.
func TestRestartSaysWhatItStopped(t *testing.T) {
	testgate.E2E(t)
	bin := testbin.Path(t)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	root := nightRoot(t, dead, 10) // the worker waits for /health: alive, no records
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	raw := filepath.Join(root, "prepared", "B1_night", "raw_responses.jsonl")
	wr := exec.Command("sh", "-c", "exec 3>>"+remote.Quote(raw)+"; while :; do sleep .5; done")
	wr.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := wr.Start(); err != nil {
		t.Fatal(err)
	}
	p := wr.Process.Pid
	go wr.Wait()
	defer syscall.Kill(-p, syscall.SIGKILL)
	defer exec.Command("pkill", "-KILL", "-f", "worker --root "+root).Run()
	time.Sleep(300 * time.Millisecond)

	base := []string{"--local", root, "--worker-bin", bin, "--grace", "2s"}
	out, code := execCLI(t, append(append([]string{"restart"}, base...), "B1_night")...)
	if code == 0 || !strings.Contains(out, fmt.Sprintf("pid %d", p)) || !strings.Contains(out, "--pid") || !alive(p) {
		t.Fatalf("restart next to another writer: code %d alive %v: %s", code, alive(p), out)
	}
	out, code = execCLI(t, append(append([]string{"restart", "--pid", strconv.Itoa(p)}, base...), "B1_night")...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("stopped pid %d", p)) || !strings.Contains(out, "exec 3>>") ||
		!strings.Contains(out, "worker restarted with B1_night first") {
		t.Fatalf("restart --pid: code %d: %s", code, out)
	}
	out, code = execCLI(t, "kill", "--local", root, "--grace", "5s")
	if code != 0 {
		t.Fatalf("kill: code %d: %s", code, out)
	}
	out, code = execCLI(t, "status", "--local", root)
	if code != 0 || !strings.Contains(out, "worker: stopped (by you) (pid ") {
		t.Fatalf("status after kill: code %d: %s", code, out)
	}
}
