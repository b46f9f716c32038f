package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/spf13/pflag"
	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// Precedence: flag > SYNTHWATCH_* environment > [hosts."…"] > top level > default.
func TestSettingsPrecedence(t *testing.T) {
	conf := fileConfig{Root: "/top", ServerURL: "http://top:1", StallAfter: &duration{20 * time.Minute},
		Hosts: map[string]hostFileConfig{"gpu1": {Root: "/gpu1", WorkerBin: "/opt/sw"}, "root@gpu2": {Root: "/gpu2-root"}}}
	for _, c := range []struct {
		name       string
		host       string
		flags      []string
		env        map[string]string
		key, value string
		origin     string
	}{
		{"default", "other", nil, nil, "poll_interval", "2s", "default"},
		{"top level", "other", nil, nil, "root", "/top", "config.toml"},
		{"host section", "gpu1", nil, nil, "root", "/gpu1", `config.toml [hosts."gpu1"]`},
		{"host section without user@", "root@gpu1", nil, nil, "root", "/gpu1", `config.toml [hosts."gpu1"]`},
		{"host section with user@", "root@gpu2", nil, nil, "root", "/gpu2-root", `config.toml [hosts."root@gpu2"]`},
		{"host section falls back to top", "gpu1", nil, nil, "server_url", "http://top:1", "config.toml"},
		{"host-only key", "gpu1", nil, nil, "worker_bin", "/opt/sw", `config.toml [hosts."gpu1"]`},
		{"env over host section", "gpu1", nil, map[string]string{"SYNTHWATCH_ROOT": "/env"}, "root", "/env", "env SYNTHWATCH_ROOT"},
		{"flag over env", "gpu1", []string{"--root", "/flag"}, map[string]string{"SYNTHWATCH_ROOT": "/env"}, "root", "/flag", "flag --root"},
		{"top-level duration", "gpu1", nil, nil, "stall_after", "20m", "config.toml"},
		{"env duration", "gpu1", nil, map[string]string{"SYNTHWATCH_STALL_AFTER": "90s"}, "stall_after", "1m30s", "env SYNTHWATCH_STALL_AFTER"},
		{"flag duration", "gpu1", []string{"--stall-after", "1h"}, map[string]string{"SYNTHWATCH_STALL_AFTER": "90s"}, "stall_after", "1h", "flag --stall-after"},
		{"nested key from env", "gpu1", nil, map[string]string{"SYNTHWATCH_NOTIFY_OFF": "stall,disconnect"}, "notify.off", "stall,disconnect", "env SYNTHWATCH_NOTIFY_OFF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fl := pflag.NewFlagSet("x", pflag.ContinueOnError)
			fl.String("root", pipeline.DefaultRoot, "")
			fl.Duration("stall-after", 10*time.Minute, "")
			if err := fl.Parse(c.flags); err != nil {
				t.Fatal(err)
			}
			s, err := resolveWith(fl, c.host, func(k string) string { return c.env[k] }, conf)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Get(c.key); got.Value != c.value || got.Origin != c.origin {
				t.Errorf("%s = %q from %q, want %q from %q", c.key, got.Value, got.Origin, c.value, c.origin)
			}
		})
	}
}

// Values that would be silently wrong are usage errors that name their origin.
func TestSettingsRefuseBadValues(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	os.MkdirAll(filepath.Join(dir, "synthwatch"), 0o700)
	file := filepath.Join(dir, "synthwatch", "config.toml")
	for _, c := range []struct {
		file string
		args []string
		env  map[string]string
		want string
	}{
		{"[notify]\noff = [\"stal\"]\n", nil, nil, `notify.off (from config.toml): unknown notice "stal"`},
		{"stall_after = \"-5m\"\n", nil, nil, `"-5m" must be more than zero`},
		{"[notify]\ndisconnect_after = \"0s\"\n", nil, nil, `"0s" must be more than zero`},
		{"", []string{"--stall-after", "-5m"}, nil, "stall_after (from flag --stall-after)"},
		{"", nil, map[string]string{"SYNTHWATCH_POLL_INTERVAL": "-1s"}, "poll_interval (from env SYNTHWATCH_POLL_INTERVAL)"},
		{"", nil, map[string]string{"SYNTHWATCH_NOTIFY_OSC": "maybe"}, `"maybe" is not true or false`},
		{"rot = \"/x\"\n", nil, nil, `unknown key "rot"`},
		{"disk_floor = 120\n", nil, nil, `"120" is no percentage between 0 and 100`},
		{"", nil, map[string]string{"SYNTHWATCH_DISK_FLOOR": "five"}, "disk_floor (from env SYNTHWATCH_DISK_FLOOR)"},
	} {
		os.WriteFile(file, []byte(c.file), 0o600)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		out, code := execCLI(t, append(append([]string{"config"}, c.args...), "gpu1")...)
		if code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%q %v %v: code %d, %s (want %q)", c.file, c.args, c.env, code, out, c.want)
		}
		for k := range c.env {
			t.Setenv(k, "")
		}
	}
}

// disk_floor is a percentage, written as a number or with its %.
func TestDiskFloorSetting(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	os.MkdirAll(filepath.Join(dir, "synthwatch"), 0o700)
	file := filepath.Join(dir, "synthwatch", "config.toml")
	for in, want := range map[string]float64{"": 0.05, "disk_floor = 3\n": 0.03, "disk_floor = \"2.5%\"\n": 0.025, "disk_floor = 10.0\n": 0.1} {
		os.WriteFile(file, []byte(in), 0o600)
		s, err := resolveSettings(nil, "gpu1", func(string) string { return "" })
		if err != nil || s.DiskFloor != want {
			t.Errorf("%q: %v %v, want %v", in, s.DiskFloor, err, want)
		}
	}
	os.WriteFile(file, []byte("disk_floor = 3\n"), 0o600)
	s, err := resolveSettings(nil, "gpu1", func(k string) string { return map[string]string{"SYNTHWATCH_DISK_FLOOR": "1%"}[k] })
	if err != nil || s.DiskFloor != 0.01 || s.Get("disk_floor").Origin != "env SYNTHWATCH_DISK_FLOOR" {
		t.Errorf("env: %v %+v %v", s.DiskFloor, s.Get("disk_floor"), err)
	}
}

// `synthwatch config HOST` shows every value and its origin.
func TestConfigCommandGolden(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	os.MkdirAll(filepath.Join(dir, "synthwatch"), 0o700)
	os.WriteFile(filepath.Join(dir, "synthwatch", "config.toml"), []byte(`root = "/data/top"
poll_interval = "5s"

[notify]
command = "curl -s -d @- https://ntfy.example/gpu"
off = ["category_done"]

[hosts."gpu1"]
root = "/data/eagle3/gpu1"
worker_bin = "/opt/synthwatch"
`), 0o600)
	t.Setenv("SYNTHWATCH_STALL_AFTER", "20m")
	out, code := execCLI(t, "config", "--server-url", "http://127.0.0.1:30001", "gpu1")
	if code != 0 {
		t.Fatalf("code %d: %s", code, out)
	}
	got := strings.ReplaceAll(out, dir, "$XDG_CONFIG_HOME")
	golden.RequireEqual(t, got) // testdata/TestConfigCommandGolden.golden; -update rewrites it
}

// sshArgs are the flags that reach s and nothing of the user's own ssh setup.
func sshArgs(t testing.TB, s *sshdtest.Server) []string {
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	os.WriteFile(cfg, nil, 0o600)
	return []string{"-F", cfg, "-i", s.KeyPath, "-o", "UserKnownHostsFile=" + s.KnownHosts, "-o", "StrictHostKeyChecking=yes"}
}

// A closed port: status says why, at once, with exit 3.
func TestStatusClosedPortSaysTheDialError(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	os.WriteFile(cfg, nil, 0o600)
	out, code := execCLI(t, "status", "-F", cfg, "-o", "ConnectTimeout=2", "-o", "UserKnownHostsFile="+filepath.Join(t.TempDir(), "kh"), "127.0.0.1:1")
	if code != exitConnect || !strings.Contains(out, "dial tcp 127.0.0.1:1: connect: connection refused") || strings.Contains(out, "dial 127.0.0.1:1: dial") {
		t.Errorf("code %d: %s", code, out)
	}
}

// A root with no prepared/ is an error that names the root and how to set
// it, for status and report (which check it only when they found nothing
// there) as for kill.
func TestWrongRootExits1(t *testing.T) {
	s := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	target := s.User + "@" + s.Addr()
	out, code := execCLI(t, append(append([]string{"status"}, sshArgs(t, s)...), "--root", "/data/typo/synth", target)...)
	for _, want := range []string{"no pipeline root at /data/typo/synth on " + target, "no prepared/ directory", "the root came from flag --root", "--root DIR", `root = "DIR"`, `[hosts."` + target + `"]`} {
		if code != exitFailed || !strings.Contains(out, want) {
			t.Errorf("code %d, no %q in: %s", code, want, out)
		}
	}
	out, code = execCLI(t, append(append([]string{"report"}, sshArgs(t, s)...), "--root", "/data/typo/synth", target)...)
	if code != exitFailed || !strings.Contains(out, "no pipeline root at /data/typo/synth on "+target) {
		t.Errorf("report: code %d: %s", code, out)
	}
	out, code = execCLI(t, append(append([]string{"kill"}, sshArgs(t, s)...), target)...)
	if code != exitFailed || !strings.Contains(out, "no pipeline root at "+pipeline.DefaultRoot) || !strings.Contains(out, "that is the default root") {
		t.Errorf("kill on the default root: code %d: %s", code, out)
	}
	out, code = execCLI(t, "status", "--local", filepath.Join(t.TempDir(), "nope"))
	if code != exitFailed || !strings.Contains(out, "on this machine") || !strings.Contains(out, "--local DIR") {
		t.Errorf("local: code %d: %s", code, out)
	}
}

// A per-host root in config.toml is what status and kill use, over a real sshd.
func TestPerHostRootUsedByStatusAndKill(t *testing.T) {
	testgate.E2E(t)
	bin := testbin.Path(t)
	s := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	root := nightRoot(t, dead, 10) // the worker waits for /health: alive, no records
	pid, err := actions.Actor{H: remote.Local{}, Root: root, WorkerBin: bin}.Launch(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-pid, syscall.SIGKILL)

	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	os.MkdirAll(filepath.Join(dir, "synthwatch"), 0o700)
	target := s.User + "@" + s.Addr()
	os.WriteFile(filepath.Join(dir, "synthwatch", "config.toml"), []byte("root = \"/data/not/here\"\n[hosts.\""+target+"\"]\nroot = \""+root+"\"\n"), 0o600)

	out, code := execCLI(t, append(append([]string{"status"}, sshArgs(t, s)...), target)...)
	if code != 0 || !strings.Contains(out, root) || !strings.Contains(out, "B1_night") || !strings.Contains(out, "worker: running") {
		t.Fatalf("status: code %d: %s", code, out)
	}
	out, code = execCLI(t, append(append([]string{"kill", "--grace", "5s"}, sshArgs(t, s)...), target)...)
	if code != 0 || !strings.Contains(out, "worker stopped") {
		t.Fatalf("kill: code %d: %s", code, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("pid %d still runs after kill", pid)
	}
}
