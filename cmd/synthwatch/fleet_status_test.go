package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// status --json over a fleet: one object keyed by host in the order
// given, each host read with its own [hosts.gpuN] root; a host that cannot
// be reached is an entry with its error and fails no other; the exit code
// is the worst host's.
func TestStatusJSONKeyedByHost(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	lab := newFleetLab(t, 2, func(i int) string { return nightRoot(t, "http://127.0.0.1:1", 10*(i+1)) }, nil)
	t.Setenv("XDG_CONFIG_HOME", lab.confDir)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	out, code := execCLI(t, "status", "--json", "-F", lab.sshCfg, "-o", "ConnectTimeout=3", "gpu1", "127.0.0.1:1", "gpu2")
	if code != exitConnect {
		t.Errorf("exit %d, want the unreachable host's %d", code, exitConnect)
	}
	body := out[:strings.LastIndex(out, "}")+1]
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if i, j, k := strings.Index(body, `"gpu1"`), strings.Index(body, `"127.0.0.1:1"`), strings.Index(body, `"gpu2"`); !(i >= 0 && i < j && j < k) {
		t.Errorf("the hosts are not in the order given:\n%s", body)
	}
	for i := range 2 {
		var s snapshot.Snapshot
		if err := json.Unmarshal(got[alias(i)], &s); err != nil || s.Root != lab.roots[i] || len(s.Categories) != 1 || s.Categories[0].Target != int64(10*(i+1)) {
			t.Errorf("%s: err %v, root %q (want %q), categories %+v", alias(i), err, s.Root, lab.roots[i], s.Categories)
		}
	}
	var he hostError
	if err := json.Unmarshal(got["127.0.0.1:1"], &he); err != nil || he.ExitCode != exitConnect || !strings.Contains(he.Error, "connection refused") {
		t.Errorf("the unreachable host's entry: %+v (%v)", he, err)
	}
	if !strings.Contains(out, "1 of 3 hosts failed") {
		t.Errorf("stderr does not say which host failed:\n%s", out)
	}
}

// status --follow over a fleet (--fleet lab): a JSON line {"HOST":
// Snapshot} per host per poll, --count per host.
func TestStatusFollowFleetLinesPerHost(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	lab := newFleetLab(t, 2, func(i int) string { return nightRoot(t, "http://127.0.0.1:1", 5) }, nil)
	t.Setenv("XDG_CONFIG_HOME", lab.confDir)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	out, code := execCLI(t, "status", "--follow", "--json", "--count", "2", "--poll", "200ms", "-F", lab.sshCfg, "--fleet", "lab")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	per := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]snapshot.Snapshot
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || len(line) != 1 {
			t.Fatalf("not one {host: Snapshot} a line: %v: %q", err, sc.Text())
		}
		for h, s := range line {
			per[h]++
			if i := strings.TrimPrefix(h, "gpu"); s.Root != lab.roots[i[0]-'1'] {
				t.Errorf("%s read root %q", h, s.Root)
			}
		}
	}
	if per["gpu1"] != 2 || per["gpu2"] != 2 || len(per) != 2 {
		t.Errorf("lines per host: %v", per)
	}
}

// [fleets.NAME] in config.toml: --fleet adds its hosts after those given,
// each once; an unknown fleet is a usage error that says how to add it.
func TestFleetHostsFromConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	os.MkdirAll(filepath.Join(dir, "synthwatch"), 0o700)
	os.WriteFile(filepath.Join(dir, "synthwatch", "config.toml"), []byte("[fleets.lab]\nhosts = [\"gpu1\", \"root@10.1.230.175:2222\"]\n[hosts.gpu1]\nroot = \"/r1\"\n"), 0o600)
	got, err := fleetHosts([]string{"gpu1", "gpu9"}, "lab")
	if err != nil || strings.Join(got, " ") != "gpu1 gpu9 root@10.1.230.175:2222" {
		t.Errorf("hosts %v, %v", got, err)
	}
	if _, err := fleetHosts(nil, "nope"); exitCode(err) != exitUsage || !strings.Contains(err.Error(), "[fleets.nope]") {
		t.Errorf("unknown fleet: %v", err)
	}
	s, err := resolveWith(nil, "gpu1", func(string) string { return "" }, mustConfig(t, filepath.Join(dir, "synthwatch", "config.toml")))
	if err != nil || s.Root != "/r1" {
		t.Errorf("gpu1's own root: %q %v", s.Root, err)
	}
}

func mustConfig(t *testing.T, p string) fileConfig {
	c, _, err := loadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
