package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

// Every command over a host whose login shell (bash, zsh, fish, tcsh) prints
// banners on stdout and stderr before each command, with and without a
// newline: deploy's platform check, launch's pid, status (the agent, its
// install, the vitals), report's digest, restart and kill work, and no
// banner reaches their output.
func TestEveryCommandThroughBanners(t *testing.T) {
	testgate.E2E(t)
	bin := testbin.Path(t)
	for _, b := range sshdtest.Banners {
		t.Run(b.Name, func(t *testing.T) {
			if _, err := exec.LookPath(b.Shell); err != nil {
				t.Fatalf("%s: %v (apt-get install -y %s)", b.Shell, err, b.Name)
			}
			s := sshdtest.Start(t, sshdtest.WithLoginShell(b.Shell))
			s.WriteRC(t, b.RC)
			srv := sim.New(sim.Options{Speed: 4})
			if err := srv.Start("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			t.Setenv("SSH_AUTH_SOCK", "")
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			root := nightRoot(t, srv.URL(), 400)
			defer exec.Command("pkill", "-KILL", "-f", "worker --root "+root).Run()
			target := s.User + "@" + s.Addr()
			ssh := sshArgs(t, s)
			// cmd runs a subcommand with its flags, the host, then what follows "--"
			cmd := func(args ...string) string {
				t.Helper()
				var after []string
				for i, a := range args {
					if a == "--" {
						args, after = args[:i], args[i+1:]
						break
					}
				}
				out, code := execCLI(t, append(append(append(append([]string{args[0]}, ssh...), args[1:]...), target), after...)...)
				if code != 0 {
					t.Fatalf("%s: code %d: %s\nsshd:\n%s", args[0], code, out, s.Log())
				}
				for _, banner := range []string{"gpu-box", "no newline", "module loaded", "conda"} {
					if strings.Contains(out, banner) {
						t.Fatalf("%s: a banner (%q) in the output:\n%s", args[0], banner, out)
					}
				}
				return out
			}
			dest := filepath.Join(t.TempDir(), "deployed", "synthwatch")
			if out := cmd("deploy", "--worker-bin", dest); !strings.Contains(out, "deployed to "+dest) || !strings.Contains(out, "host agent installed to ") {
				t.Fatalf("deploy: %s", out)
			}
			if out := cmd("launch", "--root", root, "--worker-bin", bin); !strings.Contains(out, "pid ") {
				t.Fatalf("launch said no pid: %s", out)
			}
			deadline := time.Now().Add(2 * time.Minute)
			for {
				out := cmd("status", "--root", root, "--worker-bin", bin)
				if strings.Contains(out, "worker: running") && !strings.Contains(out, "B1_night             SHORT  0 ") {
					if !strings.Contains(out, "go agent") {
						t.Fatalf("status was not read by the installed agent: %s", out)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("status never showed the worker writing: %s", out)
				}
				time.Sleep(time.Second)
			}
			var rep reportJSON
			if out := cmd("report", "--root", root, "--worker-bin", bin, "--json"); json.Unmarshal([]byte(out), &rep) != nil || len(rep.Summary.Categories) != 1 {
				t.Fatalf("report --json: %s", out)
			}
			if out := cmd("restart", "--root", root, "--worker-bin", bin, "--grace", "10s", "--", "B1_night"); !strings.Contains(out, "worker restarted with B1_night first") {
				t.Fatalf("restart: %s", out)
			}
			out := cmd("kill", "--root", root, "--grace", "10s")
			if strings.Contains(out, "*") {
				t.Fatalf("kill's message: %s", out)
			}
			if out := cmd("status", "--root", root); !strings.Contains(out, "stopped (by you)") {
				t.Fatalf("status after kill: %s", out)
			}
			_ = os.Remove(dest)
		})
	}
}
