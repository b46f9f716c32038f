package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

func TestMain(m *testing.M) {
	// the test binary is synthwatch: a status installs it as the host agent,
	// and the host runs it so ("agent …"), or a report's digest ("digest …"):
	// a first argument that is no test flag is a subcommand
	if len(os.Args) >= 2 && (os.Args[1] == "agent" || os.Args[1] == "digest") {
		root := newRoot()
		root.SetArgs(os.Args[1:])
		if err := root.Execute(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	// the tests' config and state are their own: a developer's config.toml
	// does not steer them, and the hints, history and log their commands
	// keep do not land in the developer's ~/.local/state (a test that wants
	// its own sets it again)
	home, err := os.MkdirTemp("", "synthwatch-test-xdg-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME"} {
		os.Setenv(k, filepath.Join(home, strings.ToLower(k)))
	}
	code := m.Run()
	tmuxCmd("kill-server").Run() // its dashboards end before their state's folder goes
	os.RemoveAll(home)
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	os.Remove(filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()), tmuxServer)) // tmux leaves its socket
	testbin.Cleanup()
	os.Exit(code)
}

// tmuxServer is this test process's own tmux server: its buffers, titles
// and sessions are nobody else's (not another go test's, not the user's).
var tmuxServer = fmt.Sprintf("synthwatch-test-%d", os.Getpid())

func tmuxCmd(args ...string) *exec.Cmd {
	return exec.Command("tmux", append([]string{"-L", tmuxServer}, args...)...)
}

// tmux drives a real terminal.
type tmux struct {
	t       *testing.T
	session string
}

func needTmux(t *testing.T) {
	testgate.E2E(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux not found; install it with: apt-get install -y tmux")
		}
		t.Skip("tmux not found (apt-get install -y tmux); skipped outside CI")
	}
}

func startTmux(t *testing.T, w, h int, env []string, argv ...string) *tmux {
	needTmux(t)
	x := &tmux{t: t, session: fmt.Sprintf("sw%d", time.Now().UnixNano())}
	args := []string{"new-session", "-d", "-s", x.session, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h)}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	args = append(args, argv...)
	for try := 0; ; try++ {
		// the test's tmux server exits with its last session: a new one
		// that meets it on its way out is refused, and the next one starts
		// a server again
		out, err := tmuxCmd(args...).CombinedOutput()
		if err == nil {
			break
		}
		if try == 5 || !strings.Contains(string(out), "server exited unexpectedly") {
			t.Fatalf("tmux: %v %s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	tmuxCmd("set-option", "-t", x.session, "remain-on-exit", "on").Run()
	t.Cleanup(func() { tmuxCmd("kill-session", "-t", x.session).Run() })
	return x
}

func (x *tmux) screen() string {
	out, _ := tmuxCmd("capture-pane", "-p", "-t", x.session).Output()
	return string(out)
}

func (x *tmux) keys(k ...string) {
	tmuxCmd(append([]string{"send-keys", "-t", x.session}, k...)...).Run()
}

func (x *tmux) waitFor(what string, d time.Duration, cond func(string) bool) string {
	x.t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := x.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("%s: not on screen within %s:\n%s", what, d, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (x *tmux) waitText(s string, d time.Duration) string {
	x.t.Helper()
	return x.waitFor(strconv.Quote(s), d, func(scr string) bool { return strings.Contains(scr, s) })
}

var doneRe = regexp.MustCompile(`B1\s+SHORT\s+(\d+)/300`)

func done(scr string) int {
	m := doneRe.FindStringSubmatch(scr)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// The whole product, as a person would use it: the real binary in tmux,
// over a real sshd, driving the real worker against sim.
func TestDashboardInTmuxEndToEnd(t *testing.T) {
	testgate.E2E(t)
	needTmux(t)
	bin := testbin.Path(t)
	s := sshdtest.Start(t)
	srv := sim.New(sim.Options{Speed: 4})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	var manifest strings.Builder
	fmt.Fprintf(&manifest, "server = %q\n[classes.SHORT]\nconcurrency = 8\n[[categories]]\nname = \"B1\"\nclass = \"SHORT\"\n", srv.URL())
	os.MkdirAll(filepath.Join(root, "prepared", "B1"), 0o755)
	var prompts strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&prompts, `{"id":%d,"messages":[{"role":"user","content":"q"}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(root, "prepared", "B1", "prompts.jsonl"), []byte(prompts.String()), 0o644)
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte(manifest.String()), 0o644)
	defer exec.Command("pkill", "-KILL", "-f", "worker --root "+root).Run()

	state := t.TempDir()
	x := startTmux(t, 120, 40, []string{"XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + state, "SSH_AUTH_SOCK="},
		"sh", "-c", `"$@"; echo "exit status $?"; sleep 600`, "sh", bin, "-i", s.KeyPath, "-o", "UserKnownHostsFile="+s.KnownHosts, "-o", "StrictHostKeyChecking=yes",
		"--root", root, "--worker-bin", bin, "--server-url", srv.URL(), "--poll", "500ms", "--grace", "10s", s.User+"@"+s.Addr())
	x.waitFor("connected with the category", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "● connected") && done(scr) == 0
	})
	x.keys("L")
	x.waitText("Launch the worker on", 30*time.Second)
	x.keys("y")
	x.waitText("worker running pid", 15*time.Second)
	x.waitFor("counts rise", 30*time.Second, func(scr string) bool { return done(scr) > 0 })
	x.keys("K")
	scr := x.waitText("Kill worker pid", 30*time.Second)
	pid := regexp.MustCompile(`Kill worker pid (\d+)`).FindStringSubmatch(scr)[1]
	x.keys("y")
	x.waitText("worker stopped pid "+pid, 20*time.Second)
	x.keys("r")
	x.waitText("Resume the worker on", 30*time.Second)
	x.keys("y")
	scr = x.waitFor("running again", 15*time.Second, func(scr string) bool {
		return strings.Contains(scr, "worker running pid") && !strings.Contains(scr, "worker running pid "+pid+" ")
	})
	newPid := regexp.MustCompile(`worker running pid (\d+)`).FindStringSubmatch(scr)[1]
	x.keys("q")
	x.waitText("the worker keeps running on "+s.User+"@"+s.Addr(), 10*time.Second)
	x.waitText("exit status 0", 30*time.Second)
	if err := exec.Command("sh", "-c", "tr '\\0' ' ' < /proc/"+newPid+"/cmdline | grep -q 'worker --root'").Run(); err != nil {
		t.Fatalf("the worker (pid %s) did not survive the dashboard quitting", newPid)
	}
}

// ctrl+z in the real terminal, or a stop sent from outside (kill -TSTP):
// the shell gets its prompt back in a terminal it can use (its own echo of
// what is typed), fg brings the dashboard back repainted and in raw mode
// (a plain q quits it, with no enter).
func TestSuspendAndResumeInTmux(t *testing.T) {
	testgate.E2E(t)
	needTmux(t)
	bin := testbin.Path(t)
	for _, how := range []string{"ctrl+z", "kill -TSTP"} {
		t.Run(how, func(t *testing.T) {
			root := t.TempDir()
			os.MkdirAll(filepath.Join(root, "prepared", "B1"), 0o755)
			os.WriteFile(filepath.Join(root, "prepared", "B1", "prompts.jsonl"), []byte(`{"id":1,"messages":[]}`+"\n"), 0o644)
			state := t.TempDir()
			x := startTmux(t, 120, 30, []string{"XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + state, "PS1=READY$ "},
				"bash", "--norc", "--noprofile", "-i")
			x.waitText("READY$", 20*time.Second)
			x.keys(bin+" --local "+root+" --poll 500ms", "Enter")
			x.waitFor("the dashboard", 30*time.Second, func(scr string) bool { return strings.Contains(scr, "B1") && strings.Contains(scr, "? help") })
			if how == "ctrl+z" {
				x.keys("C-z")
			} else {
				out, err := exec.Command("pgrep", "-f", "^"+bin+" --local "+root).Output()
				pid := strings.Fields(string(out))
				if err != nil || len(pid) != 1 {
					t.Fatalf("the dashboard's pid: %q %v", out, err)
				}
				if err := exec.Command("kill", "-TSTP", pid[0]).Run(); err != nil {
					t.Fatal(err)
				}
			}
			x.waitFor("the shell's prompt after the stop", 20*time.Second, func(scr string) bool {
				return strings.Contains(scr, "Stopped")
			})
			// a cooked terminal echoes what is typed before Enter
			x.keys("echo typed-here")
			x.waitText("echo typed-here", 10*time.Second)
			x.keys("C-u", "clear; fg", "Enter")
			x.waitFor("the dashboard repainted after fg", 30*time.Second, func(scr string) bool {
				return strings.Contains(scr, "B1") && strings.Contains(scr, "? help") && !strings.Contains(scr, "READY$")
			})
			x.keys("q")
			x.waitText("no worker is running on", 20*time.Second) // its quit message: q was read as a key
		})
	}
}
