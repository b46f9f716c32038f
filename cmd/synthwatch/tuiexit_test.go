package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// quitExit quits the dashboard in x with q and returns its exit status
// (the shell around it writes it to status) and its last screen.
func (x *tmux) quitExit(t *testing.T, status string) (int, string) {
	t.Helper()
	x.keys("q")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(status)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			code, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			out, _ := tmuxCmd("capture-pane", "-p", "-J", "-S", "-", "-t", x.session).Output() // with what scrolled off
			return code, strings.ReplaceAll(string(out), "\n", "")                             // the quit message wraps
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard still runs 30 s after q:\n%s", x.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The dashboard that never reached its host exits as status does: 4 after
// the unknown host key was refused (esc), 3 on the fleet screen with a
// refused port (the worst host's; the other was reached); a host reached
// exits 0.
func TestDashboardExitCodeWhenNeverReached(t *testing.T) {
	needTmux(t)
	bin := testbin.Path(t)
	s := sshdtest.Start(t)
	dir := t.TempDir()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "prepared", "B1"), 0o755)
	os.WriteFile(filepath.Join(root, "prepared", "B1", "prompts.jsonl"), []byte(`{"id":1,"messages":[]}`+"\n"), 0o644)
	env := []string{"XDG_STATE_HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "SSH_AUTH_SOCK="}
	target := s.User + "@" + s.Addr()
	dash := func(t *testing.T, known string, hosts ...string) (*tmux, string) {
		status := filepath.Join(t.TempDir(), "status")
		return startTmux(t, 120, 40, env, append([]string{"sh", "-c", `"$@"; echo $? >"$0"`, status, bin, "-F", "/dev/null", "-i", s.KeyPath,
			"-o", "UserKnownHostsFile=" + known, "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=ask",
			"-o", "ConnectTimeout=5", "--root", root, "--server-url", "http://127.0.0.1:1"}, hosts...)...), status
	}

	t.Run("host key refused", func(t *testing.T) {
		empty := filepath.Join(t.TempDir(), "known_hosts")
		os.WriteFile(empty, nil, 0o600)
		x, status := dash(t, empty, target)
		x.waitText("is not known", 20*time.Second)
		x.keys("Escape")
		x.waitText("unknown host key", 20*time.Second)
		code, scr := x.quitExit(t, status)
		if code != exitHostKey || !strings.Contains(scr, "was never reached") {
			t.Errorf("exit %d, want %d:\n%s", code, exitHostKey, scr)
		}
	})
	t.Run("fleet with a refused port", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		dead := s.User + "@" + l.Addr().String()
		l.Close()
		x, status := dash(t, s.KnownHosts, target, dead)
		x.waitText("reconnecting", 30*time.Second)
		x.waitText("● up", 30*time.Second) // the other host was reached
		code, scr := x.quitExit(t, status)
		if code != exitConnect || !strings.Contains(scr, "was never reached") {
			t.Errorf("exit %d, want %d:\n%s", code, exitConnect, scr)
		}
	})
	t.Run("reached", func(t *testing.T) {
		x, status := dash(t, s.KnownHosts, target)
		x.waitText("B1", 30*time.Second)
		if code, scr := x.quitExit(t, status); code != 0 {
			t.Errorf("exit %d, want 0:\n%s", code, scr)
		}
	})
}
