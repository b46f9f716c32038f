package remote

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// AuthError means the host refused every key: retrying cannot help.
type AuthError struct{ Err error }

func (e *AuthError) Error() string { return "authentication failed: " + e.Err.Error() }
func (e *AuthError) Unwrap() error { return e.Err }

// signers gathers keys in OpenSSH's order: the identity files the user named,
// then the agent, then the default ~/.ssh/id_* keys. The returned closer ends
// the agent connection; call it after the handshake.
func signers(c Config, p Prompter) ([]ssh.Signer, func(), error) {
	var out []ssh.Signer
	var named []ssh.Signer
	var errs []error
	load := func(files []string, quiet bool) {
		for _, f := range files {
			s, err := loadKey(f, p)
			switch {
			case err == nil:
				named = append(named, s)
			case quiet && errors.Is(err, os.ErrNotExist):
			default:
				errs = append(errs, err)
			}
		}
	}
	if !c.IdentityDefaults {
		load(c.IdentityFiles, false)
	}
	out = append(out, named...)
	closer := func() {}
	if sock := c.IdentityAgent; sock != "" {
		if conn, err := net.Dial("unix", sock); err == nil {
			ag := agent.NewClient(conn)
			if as, err := ag.Signers(); err == nil {
				for _, s := range as {
					if !c.IdentitiesOnly || containsKey(named, s.PublicKey()) {
						out = append(out, s)
					}
				}
			}
			closer = func() { conn.Close() }
		}
	}
	if c.IdentityDefaults {
		named = nil
		load(c.IdentityFiles, true)
		out = append(out, named...)
	}
	if len(out) == 0 {
		closer()
		if len(errs) > 0 {
			return nil, nil, &AuthError{errors.Join(errs...)}
		}
		return nil, nil, &AuthError{errors.New("no keys: give one with -i, or start ssh-agent")}
	}
	return out, closer, nil
}

func containsKey(list []ssh.Signer, k ssh.PublicKey) bool {
	for _, s := range list {
		if bytes.Equal(s.PublicKey().Marshal(), k.Marshal()) {
			return true
		}
	}
	return false
}

// loadKey reads a private key; an encrypted one asks the Prompter.
func loadKey(path string, p Prompter) (ssh.Signer, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if p == nil {
			return nil, &AuthError{fmt.Errorf("key %s is encrypted and there is no terminal to ask for its passphrase (load it into ssh-agent)", filepath.Base(path))}
		}
		pass, perr := p.Passphrase(path)
		if perr != nil {
			return nil, &AuthError{fmt.Errorf("passphrase for %s: %w", path, perr)}
		}
		s, err = ssh.ParsePrivateKeyWithPassphrase(pem, pass)
		if err != nil {
			return nil, &AuthError{fmt.Errorf("key %s: %w", path, err)}
		}
		return s, nil
	}
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("key %s: %w", path, err)}
	}
	return s, nil
}
