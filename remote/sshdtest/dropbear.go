package sshdtest

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Dropbear is the path of Debian's dropbear (package dropbear-bin), or it
// skips the test (fails it under CI=true).
func Dropbear(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/dropbear", "/usr/local/sbin/dropbear"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("dropbear not found; install it with: apt-get install -y dropbear-bin")
	}
	t.Skip("dropbear not found (apt-get install -y dropbear-bin); skipped outside CI")
	return ""
}

// StartDropbear starts Dropbear, the SSH server of minimal and container
// hosts, on a free loopback port, as the current user, with the same keys
// and known_hosts as Start gives.
//
// Dropbear has no AuthorizedKeysFile option: it reads ~/.ssh/authorized_keys
// of the user's passwd home. So it runs with a clean home (cleanHome, root
// only) whose .ssh holds the test's key: the user's real keys are neither
// read nor touched. Its SFTP server is /usr/lib/sftp-server (OpenSSH's, where
// openssh-sftp-server is installed), or none with WithoutSFTP.
func StartDropbear(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	bin := Dropbear(t)
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshdtest: current user: %v", err)
	}
	if u.Uid != "0" {
		if os.Getenv("CI") == "true" {
			t.Fatal("StartDropbear binds its authorized_keys in a mount namespace, which needs root")
		}
		t.Skip("StartDropbear needs root (a mount namespace for its authorized_keys); skipped outside CI")
	}
	dir := t.TempDir()
	s := &Server{Host: "127.0.0.1", User: u.Username, Dir: dir, t: t, bin: bin}
	home := filepath.Join(dir, "home") // bound over the user's home (cleanHome): its .ssh is the server's
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	// every kind of host key, as a host's dropbear makes them (with only
	// ed25519 it fails an assertion when a client asks for RSA)
	var hostKeys []string
	for _, kind := range []string{"ed25519", "ecdsa", "rsa"} {
		p := filepath.Join(dir, "dropbear_"+kind+"_host_key")
		if out, err := exec.Command("dropbearkey", "-t", kind, "-f", p).CombinedOutput(); err != nil {
			t.Fatalf("dropbearkey -t %s: %v %s", kind, err, out)
		}
		out, err := exec.Command("dropbearkey", "-y", "-f", p).Output()
		if err != nil {
			t.Fatalf("dropbearkey -y: %v", err)
		}
		for _, l := range bytes.Split(out, []byte("\n")) {
			if pk, _, _, _, err := ssh.ParseAuthorizedKey(l); err == nil {
				s.pinned = append(s.pinned, pk)
			}
		}
		hostKeys = append(hostKeys, "-r", p)
	}
	if len(s.pinned) != 3 {
		t.Fatalf("dropbearkey -y printed %d public keys, want 3", len(s.pinned))
	}
	s.HostKey = s.pinned[0]
	clientKey := writeKey(t, filepath.Join(dir, "client_ed25519"))
	s.KeyPath = filepath.Join(dir, "client_ed25519")
	s.keys = filepath.Join(home, ".ssh", "authorized_keys")
	if err := os.WriteFile(s.keys, ssh.MarshalAuthorizedKey(clientKey), 0o600); err != nil {
		t.Fatal(err)
	}
	s.home = home
	shell := shellPre(t, u, dir, o.shell)
	s.argv = func() []string {
		// -F foreground, -E log to stderr, -s no passwords, -m no motd
		pre := append([]string(nil), shell...)
		if o.noSFTP {
			pre = append(pre, "{ ! [ -e /usr/lib/sftp-server ] || mount --bind /dev/null /usr/lib/sftp-server; }")
		}
		return cleanHome(t, u, home, append([]string{bin, "-F", "-E", "-s", "-m", "-P", filepath.Join(dir, "dropbear.pid"), "-p", "127.0.0.1:" + strconv.Itoa(s.Port)}, hostKeys...), pre...)
	}
	s.listen(func() error { return nil })
	return s
}
