package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// unreadRawRoot is the trial's root: categories of 50 prompts each whose
// raw_responses.jsonl is a FIFO (E_fifo), a directory (E_dir) and, with
// perm, a file of 10 records its reader may not read (E_perm: mode 0600
// of root's when the test runs as root, who then reads as nobody; else
// mode 0).
func unreadRawRoot(t *testing.T, perm bool) string {
	root := t.TempDir()
	cats := []string{"E_fifo", "E_dir"}
	if perm {
		cats = append(cats, "E_perm")
	}
	for _, c := range cats {
		dir := filepath.Join(root, "prepared", c)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var p strings.Builder
		for i := 0; i < 50; i++ {
			fmt.Fprintf(&p, "{\"id\": %d, \"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}\n", i)
		}
		os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
	}
	mkfifoAt(t, root, "prepared/E_fifo/raw_responses.jsonl")
	os.Mkdir(filepath.Join(root, "prepared", "E_dir", "raw_responses.jsonl"), 0o755)
	if perm {
		var r strings.Builder
		for i := 0; i < 10; i++ {
			fmt.Fprintf(&r, "{\"id\": %d, \"content\": \"ok\", \"completion_tokens\": 5}\n", i)
		}
		mode := os.FileMode(0o600)
		if os.Geteuid() != 0 {
			mode = 0
		}
		os.WriteFile(filepath.Join(root, "prepared", "E_perm", "raw_responses.jsonl"), []byte(r.String()), mode)
		os.Chmod(filepath.Join(root, "prepared", "E_perm", "raw_responses.jsonl"), mode)
	}
	return root
}

// asNobody makes cmd (the built binary) run as nobody when the test runs
// as root, so that root's 0600 file is one its reader may not read, as the
// trial had it: a copy of the binary nobody can run, and dirs (with their
// parents) open to it. Not root, cmd runs as the user, whose mode-0 file
// is unreadable alike.
func asNobody(t *testing.T, cmd *exec.Cmd, dirs ...string) {
	if os.Geteuid() != 0 {
		return
	}
	dir := t.TempDir()
	b, err := os.ReadFile(cmd.Path)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Path = filepath.Join(dir, "synthwatch")
	if err := os.WriteFile(cmd.Path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range append(dirs, dir) {
		os.Chmod(d, 0o777)
		os.Chmod(filepath.Dir(d), 0o777)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// checkUnreadRows checks status --json's rows: each unreadable file is
// named with what is wrong with it, in count_error and a warning; its
// state is unknown, not pending; no "last good figure" is claimed.
func checkUnreadRows(t *testing.T, out []byte, want map[string]string) {
	t.Helper()
	var s snapshot.Snapshot
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	rows := map[string]snapshot.Category{}
	for _, c := range s.Categories {
		rows[c.Name] = c
	}
	for name, why := range want {
		c, ok := rows[name]
		if !ok {
			t.Errorf("%s: no row in %s", name, out)
			continue
		}
		if c.State != snapshot.StateUnknown || !strings.Contains(c.CountError, why) || !strings.Contains(c.CountError, name+"/raw_responses.jsonl") || c.Done != 0 {
			t.Errorf("%s: state %s, count_error %q, done %d; want unknown and %q", name, c.State, c.CountError, c.Done, why)
		}
	}
	for _, w := range s.Warnings {
		if strings.Contains(w, "last good figure") {
			t.Errorf("a last good figure claimed where there was none: %q", w)
		}
	}
}

// Unreadable raw_responses.jsonl files, read on this machine by the
// binary: each row says what is wrong with the file, by name, and is
// unknown; the text's token line does not promise a sum to come.
func TestStatusUnreadableRawLocal(t *testing.T) {
	testgate.E2E(t)
	bin := testbin.Path(t)
	root := unreadRawRoot(t, true)
	state := t.TempDir()
	argv := []string{"status", "--local", root, "--server-url", "http://127.0.0.1:1"}
	run := func(args ...string) []byte {
		cmd := exec.Command(bin, append(argv, args...)...)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+state, "XDG_STATE_HOME="+state)
		asNobody(t, cmd, root, state)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("status %v: %v: %s", args, err, out)
		}
		return out
	}
	checkUnreadRows(t, run("--json"), map[string]string{
		"E_fifo": "not a regular file (a FIFO)",
		"E_dir":  "not a regular file (a directory)",
		"E_perm": "permission denied",
	})
	text := string(run())
	for _, want := range []string{"E_fifo: unknown: ", "not a regular file (a FIFO)", "E_perm: unknown: ", "(some categories cannot be read)"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
	for _, bad := range []string{"pending", "not added up yet", "last good figure"} {
		if strings.Contains(text, bad) {
			t.Errorf("%q in:\n%s", bad, text)
		}
	}
}

// The same over a real sshd, whichever reader answers the host's counts.
func TestStatusUnreadableRawOverSSH(t *testing.T) {
	testgate.E2E(t)
	s := sshdtest.Start(t)
	root := unreadRawRoot(t, false)
	out, code := runStatus(t, s, root, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	checkUnreadRows(t, []byte(out), map[string]string{
		"E_fifo": "not a regular file (a FIFO)",
		"E_dir":  "not a regular file (a directory)",
	})
}
