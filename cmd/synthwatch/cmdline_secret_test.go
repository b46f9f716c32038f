package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

// Every account on the host can read /proc/PID/cmdline: a --server-url
// with a password (a gateway's basic auth) reaches the worker a launch
// starts over SSH, yet is not in its command line (nor is any --server):
// it comes on the launch's stdin and reaches the worker in its environment.
func TestServerURLPasswordNotInWorkerCmdline(t *testing.T) {
	testgate.E2E(t)
	bin := testbin.Path(t)
	srv := sim.New(sim.Options{Speed: 1}) // slow: the worker is still running when its /proc is read
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const secret = "hunter2cmdline"
	url := strings.Replace(srv.URL(), "://", "://admin:"+secret+"@", 1)
	root := nightRoot(t, srv.URL(), 2000)
	s := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	args := append([]string{"launch"}, sshArgs(t, s)...)
	out, code := execCLI(t, append(args, "--root", root, "--worker-bin", bin, "--server-url", url, s.User+"@"+s.Addr())...)
	if code != 0 {
		t.Fatalf("launch: code %d: %s", code, out)
	}
	var st parse.WorkerState
	testgate.Eventually(t, time.Minute, "worker.json naming the server", func() bool {
		b, _ := os.ReadFile(filepath.Join(root, parse.WorkerStatePath))
		st, _ = parse.ParseWorkerState(b)
		return st.PID > 0 && st.Server != ""
	})
	defer syscall.Kill(-st.PID, syscall.SIGKILL)
	if want := strings.Replace(srv.URL(), "://", "://admin:***@", 1); st.Server != want {
		t.Errorf("the worker's server is %q, want %q (the flag's URL, redacted)", st.Server, want)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.ReplaceAll(string(cmdline), "\x00", " "); strings.Contains(c, secret) || strings.Contains(c, "--server ") {
		t.Errorf("the worker's command line holds the server URL: %s", c)
	}
}
