package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// complete runs the shell's completion request (what bash/zsh/fish send on
// a tab) and returns the offered words.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	out := run(t, append([]string{"__complete"}, args...)...)
	var words []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion ended") {
			words = append(words, strings.SplitN(l, "\t", 2)[0])
		}
	}
	return words
}

// A tab completes the hosts the user named in ~/.ssh/config (aliases, not
// patterns) and config.toml (hosts and fleets' hosts), fleet names after
// --fleet, and restart's category from the dashboard's history of that host.
func TestCompletionOfNames(t *testing.T) {
	home, state := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", state)
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte("Host gpu1 gpu2\n  HostName 127.0.0.1\nHost *.internal !bastion\n  User x\nHost gpu-big\n  Port 2222\n"), 0o600)
	os.MkdirAll(filepath.Join(home, ".config", "synthwatch"), 0o700)
	os.WriteFile(filepath.Join(home, ".config", "synthwatch", "config.toml"), []byte(`[hosts."root@10.1.230.174"]
root = "/data/eagle3/synth_100k"
[fleets.lab]
hosts = ["gpu1", "gpu3"]
[fleets.night]
hosts = ["gpu2"]
`), 0o600)
	tl := timeline.New(100, timeline.StatePath("root@10.1.230.174", "/data/eagle3/synth_100k"))
	tl.Add(snapshot.Event{Time: time.Now(), Kind: "stall_start", Category: "B3_magicoder", Text: "x"})
	tl.Add(snapshot.Event{Time: time.Now(), Kind: "category_done", Category: "B1_glaive", Text: "y"})

	eq := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
	eq("dashboard hosts", complete(t, "g"), "gpu-big", "gpu1", "gpu2", "gpu3")
	eq("dashboard hosts by user@", complete(t, "root@"), "root@10.1.230.174")
	eq("status, second host", complete(t, "status", "gpu1", "gpu"), "gpu-big", "gpu1", "gpu2", "gpu3")
	eq("kill takes one host", complete(t, "kill", "gpu1", ""))
	eq("--fleet", complete(t, "--fleet", ""), "lab", "night")
	eq("restart's categories", complete(t, "restart", "root@10.1.230.174", "B"), "B1_glaive", "B3_magicoder")
}
