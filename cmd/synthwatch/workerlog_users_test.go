package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// The worker log is appended to by the launch's shell in a root others may
// write: mallory links it to alice's ~/.bashrc (a category's name keeps
// ';', so a worker line appended there would run at her next login), then
// plants a log file of his own. On a real sshd, alice's launch and restart
// refuse both in one line, and her .bashrc is untouched. A log of hers she
// cannot write is said in the same words.
func TestPlantedWorkerLogIsRefused(t *testing.T) {
	alice, mallory := addUser(t, "a"), addUser(t, "m")
	lab := newTwoUserLab(t, alice, mallory)
	root := lab.teamRoot(t, 5)
	logs := filepath.Join(root, "logs")
	os.MkdirAll(logs, 0o777)
	os.Chmod(logs, 0o777)
	rc := filepath.Join(alice.Home, ".bashrc")
	alice.write(t, rc, "# alice's rc\n")
	log := parse.Layout{Root: root}.WorkerLog()
	if out, err := mallory.as("ln", "-s", rc, log).CombinedOutput(); err != nil {
		t.Fatalf("ln -s as mallory: %v %s", err, out)
	}
	restart := append([]string{"restart"}, sshArgs(t, lab.sshd)...)
	restart = append(restart, "--root", root, "--worker-bin", lab.bin, alice.Name+"@"+lab.sshd.Addr(), "A")
	for _, run := range []func() (string, int){
		func() (string, int) { return lab.cli(t, alice, "launch", "--root", root, "--worker-bin", lab.bin) },
		func() (string, int) { return execCLI(t, restart...) },
	} {
		out, code := run()
		want := "refusing the worker log " + log + ": it is a symbolic link; nothing launched"
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("as alice: code %d: %s\nwant %q", code, out, want)
		}
	}
	if b, _ := os.ReadFile(rc); string(b) != "# alice's rc\n" {
		t.Errorf("alice's .bashrc was written: %q", b)
	}

	os.Remove(log)
	mallory.write(t, log, "")
	if out, err := mallory.as("chmod", "666", log).CombinedOutput(); err != nil {
		t.Fatalf("chmod as mallory: %v %s", err, out)
	}
	out, code := lab.cli(t, alice, "launch", "--root", root, "--worker-bin", lab.bin)
	want := "refusing the worker log " + log + ": it is owned by another account (" + mallory.Name + ")"
	if code == 0 || !strings.Contains(out, want) {
		t.Errorf("launch onto mallory's log: code %d: %s\nwant %q", code, out, want)
	}

	// her own log made read-only: one line too, not the shell's exit
	os.Remove(log)
	alice.write(t, log, "")
	os.Chmod(log, 0o444)
	out, code = lab.cli(t, alice, "launch", "--root", root, "--worker-bin", lab.bin)
	want = "refusing the worker log " + log + ": you cannot write it; nothing launched"
	if code == 0 || !strings.Contains(out, want) {
		t.Errorf("launch onto her read-only log: code %d: %s\nwant %q", code, out, want)
	}
}
