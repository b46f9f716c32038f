package main

import (
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, code := execCLI(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, out)
	}
	return out
}

func TestVersion(t *testing.T) {
	out := run(t, "--version")
	if !strings.HasPrefix(out, "synthwatch version ") || len(strings.TrimSpace(out)) <= len("synthwatch version ") {
		t.Errorf("--version printed %q", out)
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		out := run(t, "completion", sh)
		if !strings.Contains(out, "synthwatch") || len(out) < 500 {
			t.Errorf("completion %s: %d bytes", sh, len(out))
		}
	}
}
