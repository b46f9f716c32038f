package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// finishedRoot is the trial's w1: one category A, 20 of 20 records, its
// manifest, and a worker.json of a worker that exited.
func finishedRoot(t *testing.T) string {
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "A")
	for _, d := range []string{dir, filepath.Join(root, "run"), filepath.Join(root, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var p, r strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&p, "{\"id\": %d, \"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}\n", i)
		fmt.Fprintf(&r, "{\"id\": %d, \"content\": \"ok\", \"completion_tokens\": 5}\n", i)
	}
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "raw_responses.jsonl"), []byte(r.String()), 0o644)
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte("[[categories]]\nname = \"A\"\n"), 0o644)
	os.WriteFile(filepath.Join(root, "run", "worker.json"), []byte(`{"pid": 999999999, "state": "done", "categories": [{"name": "A"}]}`), 0o644)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte("Processing: A (SHORT)\nA: 20 prompts\nAll categories finished.\n"), 0o644)
	return root
}

// mkfifoAt puts a FIFO where rel was; its cleanup gives it a writer, so a
// reader a failing run left blocked ends.
func mkfifoAt(t *testing.T, root, rel string) {
	p := filepath.Join(root, rel)
	os.RemoveAll(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
			f.Close()
		}
	})
}

// procsNaming lists this host's processes whose command line holds s.
func procsNaming(s string) []string {
	return procsWhere(func(cmdline, _ []byte) bool { return strings.Contains(string(cmdline), s) })
}

// procsOfServer lists the processes the sessions of srv started: each
// inherits its session's SSH_CONNECTION, which ends in srv's own port,
// through sh, timeout and an orphaning alike, where the command line of
// a script's shell names nothing the test knows.
func procsOfServer(srv *sshdtest.Server) []string {
	want := []byte(" " + srv.Host + " " + strconv.Itoa(srv.Port) + "\x00")
	return procsWhere(func(_, environ []byte) bool {
		i := bytes.Index(environ, []byte("SSH_CONNECTION="))
		if i < 0 {
			return false
		}
		v := environ[i:]
		if j := bytes.IndexByte(v, 0); j >= 0 {
			v = v[:j+1]
		}
		return bytes.HasSuffix(v, want)
	})
}

// procsWhere lists this host's processes that match, by pid and command
// line; a process that ends while it is read is not listed.
func procsWhere(match func(cmdline, environ []byte) bool) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if match(b, env) {
			out = append(out, e.Name()+" "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// runStatus runs `status` over s with args; a run still going after a
// generous bound fails the test (the trial's run hung for 2 minutes).
func runStatus(t *testing.T, s *sshdtest.Server, root string, args ...string) (out string, code int) {
	t.Helper()
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	argv := append([]string{"status", "-i", s.KeyPath, "-o", "UserKnownHostsFile=" + s.KnownHosts, "-o", "StrictHostKeyChecking=yes",
		"--root", root, "--server-url", "http://127.0.0.1:1"}, args...)
	cmd := exec.CommandContext(ctx, testbin.Path(t), append(argv, s.User+"@"+s.Addr())...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+state, "XDG_STATE_HOME="+state, "SSH_AUTH_SOCK=")
	b, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("status %v still running after 100 s: %s", args, b)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(b), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(b), 0
}

// A FIFO where the poll reads a small file, over a real sshd: status
// answers (no read waits for a writer), category A keeps its 20 records,
// the bad file is named in a warning, a bad manifest exits 1, and nothing
// is left blocked on the host. On the trial's commit each of these hung
// for 2 minutes, printed an empty table with exit 0, and left a blocked
// head behind.
func TestStatusWithAFIFOInPlaceOverSSH(t *testing.T) {
	testgate.E2E(t)
	s := sshdtest.Start(t)
	for _, tc := range []struct {
		rel      string
		warn     string // a warning holds this
		exitCode int
	}{
		{"run/worker.json", "run/worker.json: not a regular file (a FIFO)", 0},
		{"pipeline.toml", "pipeline.toml: not a regular file (a FIFO)", 1},
		{"run/synthwatch-kill", "", 0},
		{"prepared/A/runs.jsonl", "", 0},
	} {
		t.Run(strings.ReplaceAll(tc.rel, "/", "_"), func(t *testing.T) {
			root := finishedRoot(t)
			mkfifoAt(t, root, tc.rel)
			out, code := runStatus(t, s, root, "--json")
			var snap snapshot.Snapshot
			if err := json.Unmarshal([]byte(out), &snap); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if c := catOf(t, snap, "A"); c.Done != 20 {
				t.Errorf("A: done %d, want 20", c.Done)
			}
			if code != tc.exitCode {
				t.Errorf("exit %d, want %d", code, tc.exitCode)
			}
			if tc.warn != "" && !strings.Contains(strings.Join(snap.Warnings, "\n"), tc.warn) {
				t.Errorf("no warning naming %s: %q", tc.rel, snap.Warnings)
			}
			text, tcode := runStatus(t, s, root)
			if !strings.Contains(text, "\nA ") || tcode != tc.exitCode || tc.warn != "" && !strings.Contains(text, tc.warn) {
				t.Errorf("status text, exit %d:\n%s", tcode, text)
			}
			// A status whose agent answered first leaves the fallback it
			// ran beside to end at its next write (OpenSSH refuses a root
			// session's signal): wait for every process of the server's
			// sessions, not for one that names the root, which may be
			// between two such children.
			left := func() []string { return append(procsNaming(root), procsOfServer(s)...) }
			deadline := time.Now().Add(20 * time.Second) // bounds a hang; measures nothing
			for len(left()) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if l := left(); len(l) > 0 {
				t.Errorf("processes left on the host: %q", l)
			}
		})
	}
}
