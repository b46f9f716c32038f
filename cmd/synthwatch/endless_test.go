package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// TestStatusFlatAgainstEndlessLogLines: the worker log and the server log
// each end in a 2 GB line (no newline: a process that printed without
// one, sparse here), and a runs.jsonl holds one of 64 MB. The whole
// `status` command, --local and over sshd (the agent reads there), answers
// with its peak RSS far under what buffering a line would cost.
func TestStatusFlatAgainstEndlessLogLines(t *testing.T) {
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	cat := filepath.Join(root, "prepared", "A")
	must(t, os.MkdirAll(cat, 0o755))
	must(t, os.WriteFile(filepath.Join(cat, "prompts.jsonl"), []byte("{\"id\":1}\n{\"id\":2}\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(cat, "raw_responses.jsonl"), []byte("{\"id\":1}\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(root, "logs"), 0o755))
	for _, p := range []string{filepath.Join(root, "logs", "inference_all.log"), filepath.Join(root, "logs", "sglang_inference.log")} {
		must(t, os.WriteFile(p, []byte("Processing: A\n"), 0o644))
		must(t, os.Truncate(p, 2<<30))
	}
	runs := filepath.Join(cat, "runs.jsonl")
	must(t, os.WriteFile(runs, nil, 0o644))
	must(t, os.Truncate(runs, 64<<20))
	s := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	for name, args := range map[string][]string{
		"local": {"status", "--local", root},
		"ssh": {"status", "-i", s.KeyPath, "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + s.KnownHosts,
			"--root", root, s.User + "@" + s.Addr()},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(testbin.Path(t), args...)
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if cmd.ProcessState == nil || !strings.Contains(string(out), "A ") {
				t.Fatalf("status: %v\n%s", err, out)
			}
			peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
			t.Logf("peak RSS %d MB (exit %d)", peak>>20, cmd.ProcessState.ExitCode())
			if peak > 300<<20 {
				t.Fatalf("status peak RSS %d MB against 2 GB lines\n%s", peak>>20, out)
			}
		})
	}
}
