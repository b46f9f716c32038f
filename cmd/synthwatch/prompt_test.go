package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// Closing the terminal (SIGHUP), or a SIGTERM, while the unknown-host-key
// question (or the passphrase question) is open ends the dashboard, and the
// unanswered question refuses: known_hosts stays as it was, empty here.
func TestSignalDuringHostKeyPromptEndsTheDashboard(t *testing.T) {
	testgate.E2E(t)
	needTmux(t)
	bin := testbin.Path(t)
	for _, tc := range []struct {
		name       string
		sig        syscall.Signal
		passphrase bool // an encrypted key and a pinned host key: the passphrase is asked
	}{
		{"SIGHUP", syscall.SIGHUP, false},
		{"SIGTERM", syscall.SIGTERM, false},
		{"SIGHUP_passphrase", syscall.SIGHUP, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sshdtest.Start(t)
			dir := t.TempDir()
			known, keyPath, question := filepath.Join(dir, "known_hosts"), s.KeyPath, "is not known"
			var before []byte
			if tc.passphrase {
				keyPath, question = filepath.Join(dir, "client_ed25519"), "Passphrase for"
				pem, err := os.ReadFile(s.KeyPath)
				if err != nil {
					t.Fatal(err)
				}
				if before, err = os.ReadFile(s.KnownHosts); err != nil {
					t.Fatal(err)
				}
				os.WriteFile(keyPath, pem, 0o600)
				if out, err := exec.Command("ssh-keygen", "-q", "-p", "-P", "", "-N", "secret words", "-f", keyPath).CombinedOutput(); err != nil {
					t.Fatalf("ssh-keygen -p: %v %s", err, out)
				}
			}
			if err := os.WriteFile(known, before, 0o600); err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			os.MkdirAll(filepath.Join(root, "prepared", "B1"), 0o755)
			x := startTmux(t, 120, 40, []string{"XDG_STATE_HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "SSH_AUTH_SOCK="},
				"sh", "-c", `exec "$@" 2>"$0"`, filepath.Join(dir, "stderr"), bin, "-F", "/dev/null", "-i", keyPath,
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
			x.waitText(question, 20*time.Second)
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
					t.Fatalf("the dashboard (pid %d) still runs 20 s after %s with %q open:\n%s", pid, tc.name, question, x.screen())
				}
				time.Sleep(20 * time.Millisecond)
			}
			exited = true
			t.Logf("%s with %q open: the dashboard exited after %s", tc.name, question, time.Since(start).Round(time.Millisecond))
			after, err := os.ReadFile(known)
			if err != nil {
				t.Fatal(err)
			}
			if string(after) != string(before) {
				t.Fatalf("the unanswered prompt changed known_hosts: %q, was %q", after, before)
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
