package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// emptyRoot is a pipeline root whose prepared/ holds no category: empty,
// or a folder with no prompts.jsonl in it.
func emptyRoot(t *testing.T, withFolder bool) string {
	root := t.TempDir()
	dir := filepath.Join(root, "prepared")
	if withFolder {
		dir = filepath.Join(dir, "A") // no prompts.jsonl: no category
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// A root with an empty prepared/ is no empty table with exit 0: status
// names the folder it read and what it expected there, and exits 1; with
// --json it prints an error, not a Snapshot with no categories.
func TestStatusEmptyPreparedExits1(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, withFolder := range []bool{false, true} {
		root := emptyRoot(t, withFolder)
		want := "no categories in " + filepath.Join(root, "prepared") + " on this machine"
		out, code := execCLI(t, "status", "--local", root)
		if code != exitFailed || !strings.Contains(out, want) || !strings.Contains(out, "prepared/<category>/prompts.jsonl") || strings.Contains(out, "CATEGORY") {
			t.Errorf("text: code %d: %s", code, out)
		}
		out, code = execCLI(t, "status", "--json", "--local", root)
		var e hostError
		if err := json.NewDecoder(strings.NewReader(out)).Decode(&e); err != nil || code != exitFailed || e.ExitCode != exitFailed || !strings.Contains(e.Error, want) || strings.Contains(out, `"categories"`) {
			t.Errorf("json: code %d, %v: %s", code, err, out)
		}
	}
}

// The same over a real sshd, the binary run whole: the message names the
// host, and --json holds the error; the fleet's entry for the host too.
func TestStatusEmptyPreparedOverSSH(t *testing.T) {
	testgate.E2E(t)
	s := sshdtest.Start(t)
	root := emptyRoot(t, false)
	target := s.User + "@" + s.Addr()
	want := "no categories in " + filepath.Join(root, "prepared") + " on " + target
	out, code := runStatus(t, s, root)
	if code != exitFailed || strings.Contains(out, "CATEGORY") {
		t.Errorf("text: code %d, stdout %q", code, out)
	}
	out, code = runStatus(t, s, root, "--json")
	var e hostError
	if err := json.Unmarshal([]byte(out), &e); err != nil || code != exitFailed || e.ExitCode != exitFailed || !strings.Contains(e.Error, want) || !strings.Contains(e.Error, "prepared/<category>/prompts.jsonl") {
		t.Errorf("json: code %d, %v: %s", code, err, out)
	}
}
