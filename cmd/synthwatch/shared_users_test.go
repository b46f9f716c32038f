package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/sim"
)

// runAs runs the CLI on the lab's host as u itself (the account's own
// uid, HOME and ~/.config), logging in over the lab's sshd as u with a
// copy of the test's key that u owns.
func (lab *twoUserLab) runAs(t *testing.T, u hostUser, args ...string) (string, int) {
	t.Helper()
	dir := filepath.Join(u.Home, ".ssh-sw")
	key, _ := os.ReadFile(lab.sshd.KeyPath)
	kh, _ := os.ReadFile(lab.sshd.KnownHosts)
	u.write(t, filepath.Join(dir, "id"), string(key))
	u.write(t, filepath.Join(dir, "known_hosts"), string(kh))
	u.write(t, filepath.Join(dir, "config"), "")
	if out, err := u.as("chmod", "-R", "go-rwx", dir).CombinedOutput(); err != nil {
		t.Fatalf("chmod as %s: %v %s", u.Name, err, out)
	}
	argv := append([]string{lab.bin, args[0], "-F", filepath.Join(dir, "config"), "-i", filepath.Join(dir, "id"),
		"-o", "UserKnownHostsFile=" + filepath.Join(dir, "known_hosts"), "-o", "StrictHostKeyChecking=yes"}, args[1:]...)
	c := u.as(append(argv, u.Name+"@"+lab.sshd.Addr())...)
	out, err := c.CombinedOutput()
	code := 0
	if err != nil {
		code = c.ProcessState.ExitCode()
	}
	return string(out), code
}

// Finding 2, as mallory would do it where alice's ~/.config and ~/.cache
// are folders anyone may write (a team's loose home): he plants a
// config.toml whose worker_bin and notify command are his script, and his
// script as alice's host agent. alice's own status and launch (run as her,
// over sshd) refuse the config, naming it, its owner and mode; her status
// from elsewhere does not run the planted agent and says why, naming it,
// its owner and mode. His script never runs as her.
func TestPlantedConfigAndAgentAreRefused(t *testing.T) {
	alice, mallory := addUser(t, "a"), addUser(t, "m")
	lab := newTwoUserLab(t, alice, mallory)
	root := lab.teamRoot(t, 5)
	ran := filepath.Join(lab.shared, "mallory-ran")
	evil := filepath.Join(lab.shared, "evil.sh")
	mallory.write(t, evil, "#!/bin/sh\ntouch "+ran+"\n")
	os.Chmod(evil, 0o755)
	for _, d := range []string{".config", ".cache"} {
		p := filepath.Join(alice.Home, d)
		alice.as("mkdir", "-p", p).Run()
		os.Chmod(p, 0o777)
	}
	cfg := filepath.Join(alice.Home, ".config", "synthwatch", "config.toml")
	mallory.write(t, cfg, "worker_bin = \""+evil+"\"\n[notify]\ncommand = \""+evil+"\"\n")
	for _, args := range [][]string{
		{"status", "--root", root},
		{"launch", "--root", root},
	} {
		out, code := lab.runAs(t, alice, args...)
		for _, want := range []string{"worker_bin", "notify.command", " (what runs and where): " + cfg + " (owner " + mallory.Name + ", mode 0644) is not yours (" + alice.Name + ")"} {
			if code != exitUsage || !strings.Contains(out, want) {
				t.Errorf("%s as %s: code %d: %s\nwant %q", args[0], alice.Name, code, out, want)
			}
		}
	}

	if _, err := os.Stat(ran); err == nil {
		t.Fatalf("mallory's script ran as %s", alice.Name)
	}

	ver := strings.TrimPrefix(remote.AgentProto, "synthwatch-agent/") + "-" + runtime.GOOS + "-" + runtime.GOARCH
	agent := filepath.Join(alice.Home, ".cache", "synthwatch", "agent", ver, "synthwatch")
	mallory.write(t, agent, "#!/bin/sh\ntouch "+ran+"\n")
	os.Chmod(agent, 0o755)
	out, _ := lab.cli(t, alice, "status", "--root", root)
	for _, want := range []string{"refused to run the agent: " + agent + " has owner uid " + strconv.Itoa(mallory.UID) + " and mode -rwxr-xr-x", "StrictModes"} {
		if !strings.Contains(out, want) {
			t.Errorf("status as %s with a planted agent: %s\nwant %q", alice.Name, out, want)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("mallory's script ran as %s", alice.Name)
	}
}

// Finding 9: alice's own pipeline.toml (0600, hers) names a server with a
// password (a gateway's basic auth); she launches over sshd and the run
// ends. Then mallory, who shares the team root, reads all he can there and
// in alice's home: the worker log, runs.jsonl, worker.json, and alice's
// status and status --json saved in the team folder. No password in any.
func TestURLPasswordNotReadableByOthers(t *testing.T) {
	alice, mallory := addUser(t, "a"), addUser(t, "m")
	lab := newTwoUserLab(t, alice, mallory)
	srv := sim.New(sim.Options{Speed: 50})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const secret = "hunter2shared"
	url := strings.Replace(srv.URL(), "://", "://admin:"+secret+"@", 1)
	root := lab.teamRoot(t, 20)
	man := filepath.Join(root, parse.ManifestPath)
	alice.write(t, man, "server = \""+url+"\"\n")
	if out, err := alice.as("chmod", "600", man).CombinedOutput(); err != nil {
		t.Fatalf("chmod as alice: %v %s", err, out)
	}
	out, code := lab.cli(t, alice, "launch", "--root", root, "--worker-bin", lab.bin)
	if code != 0 && !strings.Contains(out, "nothing left to do") {
		t.Fatalf("launch: code %d: %s", code, out)
	}
	testgate.Eventually(t, 2*time.Minute, "the worker done", func() bool {
		b, _ := os.ReadFile(filepath.Join(root, parse.WorkerStatePath))
		st, _ := parse.ParseWorkerState(b)
		return st.State == parse.WorkerDone
	})
	if n := countFileLines(filepath.Join(root, "prepared", "A", parse.RawFile)); n != 20 {
		t.Fatalf("%d records, want 20", n)
	}
	for _, args := range [][]string{{"status", "--root", root}, {"status", "--root", root, "--json"}} {
		out, _ := lab.cli(t, alice, args...)
		if !strings.Contains(out, "admin:***@") {
			t.Errorf("%s does not show the server:\n%s", args, out)
		}
		alice.write(t, filepath.Join(lab.shared, "out", "status"+strings.Join(args[3:], "")), out)
	}
	// what mallory may read of the run names the server, redacted
	log := parse.Layout{Root: root}.WorkerLog()
	if b, err := mallory.as("cat", log).Output(); err != nil || !strings.Contains(string(b), "admin:***@") {
		t.Errorf("%s as mallory: %v: the redacted server is not there", log, err)
	}
	// grep exits 1 when it finds nothing; -s: what mallory may not read is skipped
	hits, _ := mallory.as("grep", "-rlsF", secret, lab.shared, alice.Home).Output()
	if len(hits) > 0 {
		t.Errorf("%s can read the password in:\n%s", mallory.Name, hits)
	}
}

// Finding 12: mallory names two category folders in the team root with a
// right-to-left override and zero-width characters. alice's status (text
// and JSON), her report and her dashboard's bytes in a real terminal, all
// over sshd, hold no format character; the names show without them.
func TestForeignFormatCharactersReachNoView(t *testing.T) {
	alice, mallory := addUser(t, "a"), addUser(t, "m")
	lab := newTwoUserLab(t, alice, mallory)
	root := lab.teamRoot(t, 2)
	for _, c := range []string{bidiName, zwName} {
		mallory.write(t, filepath.Join(root, parse.PreparedDir, c, parse.PromptsFile), `{"id":"1"}`+"\n")
	}
	for _, args := range [][]string{
		{"status", "--root", root, "--server-url", "http://127.0.0.1:1"},
		{"status", "--root", root, "--server-url", "http://127.0.0.1:1", "--json"},
		{"report", "--root", root},
	} {
		out, _ := lab.cli(t, alice, args...)
		if f := formatChars(out); len(f) > 0 {
			t.Errorf("%s: %+q reached the output:\n%s", args, f, out)
		}
		if args[len(args)-1] != "--json" {
			if !strings.Contains(out, "evil-bidi-gpj.exe") || !strings.Contains(out, "zwj") {
				t.Errorf("%s: the names are not shown:\n%s", args, out)
			}
			continue
		}
		// JSON escapes them (\u202e): a program still gets the true names
		var snap struct{ Categories []struct{ Name string } }
		if i := strings.Index(out, "{"); i < 0 || json.Unmarshal([]byte(out[i:]), &snap) != nil {
			t.Fatalf("status --json: %s", out)
		}
		var names []string
		for _, c := range snap.Categories {
			names = append(names, c.Name)
		}
		if !slices.Contains(names, bidiName) || !slices.Contains(names, zwName) {
			t.Errorf("status --json names %+q, want %+q and %+q", names, bidiName, zwName)
		}
	}

	needTmux(t)
	raw := filepath.Join(t.TempDir(), "pane.raw")
	argv := append([]string{"sh", "-c", `sleep 1; exec "$@"`, "sh", lab.bin}, sshArgs(t, lab.sshd)...)
	argv = append(argv, "--root", root, "--poll", "300ms", "--server-url", "http://127.0.0.1:1", alice.Name+"@"+lab.sshd.Addr())
	x := startTmux(t, 140, 40, []string{"XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "SSH_AUTH_SOCK="}, argv...)
	if out, err := tmuxCmd("pipe-pane", "-t", x.session, "-o", "cat >>"+raw).CombinedOutput(); err != nil {
		t.Fatalf("pipe-pane: %v %s", err, out)
	}
	scr := x.waitText("gpj.exe", 30*time.Second) // drawn, with or without the override
	if !strings.Contains(scr, "zwj") || !strings.Contains(scr, "evil-bidi-gpj.exe") {
		t.Errorf("the dashboard does not show the names without their format characters:\n%s", scr)
	}
	x.keys("q")
	time.Sleep(500 * time.Millisecond)
	b, err := os.ReadFile(raw)
	if err != nil || len(b) == 0 {
		t.Fatalf("no raw bytes piped: %v", err)
	}
	if f := formatChars(string(b)); len(f) > 0 {
		i := strings.Index(string(b), f[0])
		t.Errorf("the dashboard wrote %+q to the terminal: %q", f, b[max(0, i-200):min(len(b), i+100)])
	}
}
