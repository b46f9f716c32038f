package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"golang.org/x/crypto/ssh/knownhosts"
)

// fleetLab is n real sshd on loopback, each an alias gpuN in one ssh
// config (its port, key and known_hosts), with config.toml's
// [fleets.lab] and a [hosts.gpuN] root of its own.
type fleetLab struct {
	sshd    []*sshdtest.Server
	roots   []string
	sshCfg  string
	confDir string // XDG_CONFIG_HOME
}

// deploy says every host has bin deployed as its worker_bin, as a real
// fleet's hosts have the worker (and so the agent) installed.
func (lab *fleetLab) deploy(t testing.TB, bin string) {
	var toml strings.Builder
	var hosts []string
	for i, root := range lab.roots {
		fmt.Fprintf(&toml, "[hosts.%s]\nroot = %q\nworker_bin = %q\n", alias(i), root, bin)
		hosts = append(hosts, fmt.Sprintf("%q", alias(i)))
	}
	fmt.Fprintf(&toml, "[fleets.lab]\nhosts = [%s]\n", strings.Join(hosts, ", "))
	if err := os.WriteFile(filepath.Join(lab.confDir, "synthwatch", "config.toml"), []byte("root = \"/data/not/here\"\n"+toml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// alias is host i's ssh config alias.
func alias(i int) string { return fmt.Sprintf("gpu%d", i+1) }

// newFleetLab starts n sshd with a root each, made by mkRoot; addr, if set,
// gives the address host i is dialled at (a fault proxy in front of it).
func newFleetLab(t testing.TB, n int, mkRoot func(i int) string, addr func(i int, s *sshdtest.Server) string) *fleetLab {
	t.Helper()
	lab := &fleetLab{confDir: t.TempDir()}
	var cfg, toml strings.Builder
	var hosts []string
	for i := 0; i < n; i++ {
		s := sshdtest.Start(t)
		a := s.Addr()
		if addr != nil {
			a = addr(i, s)
		}
		host, port, _ := strings.Cut(a, ":")
		kh := filepath.Join(s.Dir, "fleet_known_hosts")
		os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(a)}, s.HostKey)+"\n"), 0o600)
		fmt.Fprintf(&cfg, "Host %s\n  HostName %s\n  Port %s\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n\n",
			alias(i), host, port, s.User, s.KeyPath, kh)
		root := mkRoot(i)
		fmt.Fprintf(&toml, "[hosts.%s]\nroot = %q\n", alias(i), root)
		hosts = append(hosts, fmt.Sprintf("%q", alias(i)))
		lab.sshd, lab.roots = append(lab.sshd, s), append(lab.roots, root)
	}
	fmt.Fprintf(&toml, "[fleets.lab]\nhosts = [%s]\n", strings.Join(hosts, ", "))
	lab.sshCfg = filepath.Join(t.TempDir(), "ssh_config")
	os.WriteFile(lab.sshCfg, []byte(cfg.String()), 0o600)
	os.MkdirAll(filepath.Join(lab.confDir, "synthwatch"), 0o700)
	os.WriteFile(filepath.Join(lab.confDir, "synthwatch", "config.toml"), []byte("root = \"/data/not/here\"\n"+toml.String()), 0o600)
	return lab
}
