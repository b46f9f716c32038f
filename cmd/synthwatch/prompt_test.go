package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// Closing the terminal (SIGHUP), or a SIGTERM, while the unknown-host-key
// question is open ends the dashboard, and the unanswered question refuses
// the key: known_hosts stays empty.
func TestSignalDuringHostKeyPromptEndsTheDashboard(t *testing.T) {
	needTmux(t)
	bin := testbin.Path(t)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGHUP", syscall.SIGHUP}, {"SIGTERM", syscall.SIGTERM}} {
		t.Run(tc.name, func(t *testing.T) {
			s := sshdtest.Start(t)
			dir := t.TempDir()
			known := filepath.Join(dir, "known_hosts")
			if err := os.WriteFile(known, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			os.MkdirAll(filepath.Join(root, "prepared", "B1"), 0o755)
			x := startTmux(t, 120, 40, []string{"XDG_STATE_HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "SSH_AUTH_SOCK="},
				"sh", "-c", `exec "$@" 2>"$0"`, filepath.Join(dir, "stderr"), bin, "-F", "/dev/null", "-i", s.KeyPath,
				"-o", "UserKnownHostsFile="+known, "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=ask",
				"--root", root, "--server-url", "http://127.0.0.1:1", s.User+"@"+s.Addr())
			pid, err := strconv.Atoi(tmuxFmt(t, x.session, "#{pane_pid}"))
			if err != nil {
				t.Fatal(err)
			}
			exited := false
			t.Cleanup(func() { // a hung dashboard must not outlive the test
				if !exited {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			x.waitText("is not known", 20*time.Second)
			start := time.Now()
			if err := syscall.Kill(pid, tc.sig); err != nil {
				t.Fatal(err)
			}
			deadline := start.Add(20 * time.Second)
			for running(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGQUIT) // the Go runtime prints every goroutine's stack
					time.Sleep(time.Second)
					stacks, _ := os.ReadFile(filepath.Join(dir, "stderr"))
					t.Logf("stderr:\n%s", stacks)
					t.Fatalf("the dashboard (pid %d) still runs 20 s after %s with the host-key prompt open:\n%s", pid, tc.name, x.screen())
				}
				time.Sleep(20 * time.Millisecond)
			}
			exited = true
			t.Logf("%s during the host-key prompt: the dashboard exited after %s", tc.name, time.Since(start).Round(time.Millisecond))
			b, err := os.ReadFile(known)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != 0 {
				t.Fatalf("the unanswered prompt accepted the key: known_hosts holds %q", b)
			}
		})
	}
}

// running says whether pid is a live process: not gone, and not a zombie
// its parent (tmux, with remain-on-exit) has yet to reap.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}
