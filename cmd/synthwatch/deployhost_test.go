package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// deployBin runs the built binary's deploy to target over s; it gives
// stdout, stderr and the exit code.
func deployBin(t testing.TB, s *sshdtest.Server, target string, args ...string) (string, string, int) {
	t.Helper()
	argv := append(append([]string{"deploy"}, sshArgs(t, s)...), args...)
	cmd := exec.Command(testbin.Path(t), append(argv, target)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// An older synthwatch first on the host's PATH (the exec's, which launch,
// the agent and report use, and the login shell's) shadows the one deploy
// writes to ~/.local/bin: deploy names it and what to do. With none,
// deploy says nothing more.
func TestDeployNamesAShadowingBinary(t *testing.T) {
	testgate.E2E(t)
	shadow := t.TempDir()
	os.Chmod(shadow, 0o755)
	old := filepath.Join(shadow, "synthwatch")
	os.WriteFile(old, []byte("#!/bin/sh\necho old synthwatch\n"), 0o755)
	s := sshdtest.Start(t, sshdtest.WithConfig("SetEnv PATH="+shadow+":/usr/local/bin:/usr/bin:/bin"))
	home := filepath.Join(s.Dir, "home") // the session's $HOME (sshdtest binds it over the user's)
	os.WriteFile(filepath.Join(home, ".profile"), []byte("PATH="+shadow+":$PATH\n"), 0o644)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	target := s.User + "@" + s.Addr()
	out, errOut, code := deployBin(t, s, target)
	if code != 0 || !strings.Contains(out, "deployed to ") {
		t.Fatalf("deploy: code %d: %s %s", code, out, errOut)
	}
	first, _, _ := strings.Cut(out, "\n") // then the agent's install line
	dest := strings.TrimSpace(strings.TrimPrefix(first, "deployed to "))
	for _, want := range []string{
		"warning: on the host, `synthwatch` is not the file just deployed (" + dest + ")",
		"launch, the agent and report run " + old + " (first on the PATH of an SSH command)",
		"your login shell runs " + old,
		"pass --worker-bin " + dest,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("deploy's warning lacks %q:\n%s", want, errOut)
		}
	}
	os.Remove(old)
	if out, errOut, code := deployBin(t, s, target); code != 0 || errOut != "" || !strings.Contains(out, "deployed to "+dest) {
		t.Errorf("deploy with nothing shadowing it: code %d: %q %q", code, out, errOut)
	}
}

// mountTmpfs mounts a tmpfs of size at a new directory (root only), read
// only if ro, before the sshd that must see it starts (its namespace is
// a copy), and unmounts it when the test ends.
func mountTmpfs(t *testing.T, size string, ro bool) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("mounting a tmpfs needs root; CI runs as root")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	if ro {
		if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
			t.Fatalf("remount ro: %v %s", err, out)
		}
	}
	return dir
}

// deploy onto a full disk and onto a read-only file system names each
// (the review: `sftp: "Failure" (SSH_FX_FAILURE)`), and with a HOME that
// does not exist it names the directory it could not write (the review:
// `mkdir …: <nil> mkdir: cannot create directory …`).
func TestDeploySaysWhyItCannotWrite(t *testing.T) {
	testgate.E2E(t)
	full, ro := mountTmpfs(t, "2m", false), mountTmpfs(t, "2m", true)
	s := sshdtest.Start(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	target := s.User + "@" + s.Addr()
	for _, c := range []struct{ dest, want string }{
		{filepath.Join(full, "bin", "synthwatch"), "the file system holding " + filepath.Join(full, "bin") + " has no room for the binary: "},
		{filepath.Join(ro, "bin", "synthwatch"), filepath.Join(ro, "bin") + " is on a read-only file system (mounted at " + ro + ")"},
	} {
		out, errOut, code := deployBin(t, s, target, "--worker-bin", c.dest)
		if code == 0 || !strings.Contains(errOut, "deploy to "+c.dest+": "+c.want) || !strings.Contains(errOut, "pass --worker-bin PATH in a directory you can write") {
			t.Errorf("deploy to %s: code %d: %s%s\nwant %q", c.dest, code, out, errOut, c.want)
		}
	}

	u := addUser(t, "h", "-M", "-d", fmt.Sprintf("/nonexistent-sw%d", os.Getpid()))
	lab := newTwoUserLab(t, u)
	out, errOut, code := deployBin(t, lab.sshd, u.Name+"@"+lab.sshd.Addr())
	want := "deploy: mkdir " + u.Home + "/.local/bin: " + u.Home + "/.local/bin does not exist, and / cannot be written by " + u.Name + " (drwxr-xr-x"
	if code == 0 || !strings.Contains(errOut, want) || strings.Contains(errOut, "<nil>") {
		t.Errorf("deploy with no HOME: code %d: %s%s\nwant %q", code, out, errOut, want)
	}
}
