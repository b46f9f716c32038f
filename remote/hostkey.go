package remote

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
)

// Prompter asks the user; the TUI shows a dialog, `status` reads the
// terminal. A nil Prompter, or one without a terminal, refuses.
type Prompter interface {
	// ConfirmHostKey asks whether to trust an unknown host key. Default No.
	ConfirmHostKey(host, fingerprint, keyType string) (bool, error)
	// Passphrase asks for the passphrase of an encrypted key file.
	Passphrase(keyFile string) ([]byte, error)
}

// HostKeyError is a refused host key: unknown, or changed. A changed key is
// never retried.
type HostKeyError struct {
	Host        string
	Fingerprint string // SHA256:...
	KeyType     string
	Changed     bool
	KnownHosts  string // where the old key is (changed) or would be added (unknown)
	User        string // the login, for the ssh command in the advice
	// OwnFile: KnownHosts is not ssh's default (~/.ssh/known_hosts), so the
	// ssh line names it, or ssh would add the key elsewhere
	OwnFile bool
}

// KnownHostsName is the host as OpenSSH writes it in known_hosts: the plain
// host for port 22, [host]:port for any other port.
func (e *HostKeyError) KnownHostsName() string { return knownhosts.Normalize(e.Host) }

// SSHCommand is the ssh line that connects to the host once, so that ssh
// itself can show the key and add it: ssh -p PORT user@host off port 22.
func (e *HostKeyError) SSHCommand() string {
	host, port, err := net.SplitHostPort(e.Host)
	if err != nil {
		host, port = e.Host, "22"
	}
	target := host
	if e.User != "" {
		target = e.User + "@" + host
	}
	cmd := "ssh "
	if e.OwnFile {
		cmd += "-o " + Quote("UserKnownHostsFile="+e.KnownHosts) + " "
	}
	if port != "22" {
		cmd += "-p " + port + " "
	}
	return cmd + Quote(target)
}

// RemoveCommand is the ssh-keygen line that removes the old key.
func (e *HostKeyError) RemoveCommand() string {
	return "ssh-keygen -R " + Quote(e.KnownHostsName()) + " -f " + Quote(e.KnownHosts)
}

func (e *HostKeyError) Error() string {
	if e.Changed {
		return fmt.Sprintf("HOST KEY CHANGED for %s: the host now presents %s %s, which does not match %s. "+
			"This may be an attack; refusing to connect. If the host was really reinstalled, remove its old line with: %s",
			e.Host, e.KeyType, e.Fingerprint, e.KnownHosts, e.RemoveCommand())
	}
	return fmt.Sprintf("unknown host key for %s: %s %s. Refusing to connect. "+
		"Check the fingerprint, then connect once with -o StrictHostKeyChecking=accept-new (or %s) to add it to %s as %s",
		e.Host, e.KeyType, e.Fingerprint, e.SSHCommand(), e.KnownHosts, e.KnownHostsName())
}

// hostKeys checks keys against known_hosts with skeema/knownhosts, which
// gives the callback and the matching HostKeyAlgorithms from one database.
type hostKeys struct {
	db     *knownhosts.HostKeyDB
	files  []string
	strict string
	user   string
	prompt Prompter
	// ownFile: files[0], where a key is added, is not ssh's default
	ownFile bool
}

func newHostKeys(c Config, p Prompter) (*hostKeys, error) {
	var existing []string
	for _, f := range c.KnownHostsFiles {
		if _, err := os.Stat(f); err == nil {
			existing = append(existing, f)
		}
	}
	h := &hostKeys{files: c.KnownHostsFiles, strict: c.StrictHostKey, user: c.User, prompt: p}
	h.ownFile = len(h.files) > 0 && filepath.Clean(h.files[0]) != filepath.Join(loginHome(), ".ssh", "known_hosts")
	if len(existing) > 0 {
		db, err := knownhosts.NewDB(existing...)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("known_hosts: %w", err)}
		}
		h.db = db
	}
	return h, nil
}

// algorithms lists the key types known for addr, so the server is asked
// for a key we can check (golang/go#29286).
func (h *hostKeys) algorithms(addr string) []string {
	if h.db == nil {
		return nil
	}
	return h.db.HostKeyAlgorithms(addr)
}

func (h *hostKeys) callback(hostname string, remote net.Addr, key ssh.PublicKey) error {
	fp := ssh.FingerprintSHA256(key)
	if h.db != nil {
		err := h.db.HostKeyCallback()(hostname, remote, key)
		if err == nil {
			return nil
		}
		if knownhosts.IsHostKeyChanged(err) {
			var ke *xknownhosts.KeyError
			file := h.files[0]
			if errors.As(err, &ke) && len(ke.Want) > 0 {
				file = ke.Want[0].Filename
			}
			return &HostKeyError{Host: hostname, Fingerprint: fp, KeyType: key.Type(), Changed: true, KnownHosts: file, User: h.user, OwnFile: h.ownFile}
		}
		if !knownhosts.IsHostUnknown(err) {
			return fmt.Errorf("host key check: %w", err)
		}
	}
	refused := &HostKeyError{Host: hostname, Fingerprint: fp, KeyType: key.Type(), KnownHosts: h.files[0], User: h.user, OwnFile: h.ownFile}
	switch h.strict {
	case "accept-new", "no":
		// "no" is treated as accept-new: a new host is added, a changed key is still refused
	case "ask":
		if h.prompt == nil {
			return refused
		}
		ok, err := h.prompt.ConfirmHostKey(hostname, fp, key.Type())
		if err != nil {
			return fmt.Errorf("%w (%v)", refused, err)
		}
		if !ok {
			return refused
		}
	default:
		return refused
	}
	if err := h.add(hostname, key); err != nil {
		return fmt.Errorf("accept host key for %s: %w", hostname, err)
	}
	return nil
}

// add appends the key to the first user known_hosts file.
func (h *hostKeys) add(hostname string, key ssh.PublicKey) error {
	file := h.files[0]
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key))
	return err
}
