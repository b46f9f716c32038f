package remote

import (
	"strings"
	"testing"
)

// The advice in a host-key refusal must be commands that work: OpenSSH
// writes [host]:port in known_hosts off port 22, and ssh takes -p; a
// known_hosts of the user's own choosing is named, or ssh would add the
// key to ~/.ssh/known_hosts, where synthwatch does not look.
func TestHostKeyAdviceIsRealCommands(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		host, user, name, ssh, rm string
	}{
		{"127.0.0.1:39847", "user", "[127.0.0.1]:39847", "ssh -p 39847 user@127.0.0.1", "ssh-keygen -R '[127.0.0.1]:39847' -f /home/u/.ssh/known_hosts"},
		{"127.0.0.1:22", "user", "127.0.0.1", "ssh user@127.0.0.1", "ssh-keygen -R 127.0.0.1 -f /home/u/.ssh/known_hosts"},
		{"gpu1.example:22", "", "gpu1.example", "ssh gpu1.example", "ssh-keygen -R gpu1.example -f /home/u/.ssh/known_hosts"},
		{"[::1]:2222", "root", "[::1]:2222", "ssh -p 2222 root@::1", "ssh-keygen -R '[::1]:2222' -f /home/u/.ssh/known_hosts"},
	} {
		e := &HostKeyError{Host: c.host, User: c.user, KeyType: "ssh-ed25519", Fingerprint: "SHA256:x", KnownHosts: "/home/u/.ssh/known_hosts"}
		if got := e.KnownHostsName(); got != c.name {
			t.Errorf("%s: known_hosts name %q, want %q", c.host, got, c.name)
		}
		if got := e.SSHCommand(); got != c.ssh {
			t.Errorf("%s: ssh line %q, want %q", c.host, got, c.ssh)
		}
		own := *e
		own.OwnFile, own.KnownHosts = true, "/tmp/my kh"
		if got, want := own.SSHCommand(), strings.Replace(c.ssh, "ssh ", "ssh -o 'UserKnownHostsFile=/tmp/my kh' ", 1); got != want {
			t.Errorf("%s, own known_hosts: ssh line %q, want %q", c.host, got, want)
		}
		if got := e.RemoveCommand(); got != c.rm {
			t.Errorf("%s: remove line %q, want %q", c.host, got, c.rm)
		}
		if !strings.Contains(e.Error(), c.ssh) || !strings.Contains(e.Error(), c.name) {
			t.Errorf("unknown-key advice: %s", e.Error())
		}
		e.Changed = true
		if !strings.Contains(e.Error(), c.rm) {
			t.Errorf("changed-key advice: %s", e.Error())
		}
	}
}
