package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"golang.org/x/crypto/ssh"
)

// exec runs the CLI in-process and returns its output and exit code.
func execCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return out.String(), 0
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		return out.String() + err.Error(), ec.ExitCode()
	}
	return out.String() + err.Error(), 1
}

func TestExitCodes(t *testing.T) {
	s := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	empty := filepath.Join(t.TempDir(), "known_hosts")
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "prepared", "A"), 0o755) // one category: an empty prepared/ is exit 1
	os.WriteFile(filepath.Join(root, "prepared", "A", "prompts.jsonl"), []byte("{\"id\": 0}\n"), 0o644)
	base := []string{"status", "-i", s.KeyPath, "-o", "StrictHostKeyChecking=yes", "--root", root}

	out, code := execCLI(t, append(base, "-o", "UserKnownHostsFile="+empty, s.User+"@"+s.Addr())...)
	if code != exitHostKey || !strings.Contains(out, ssh.FingerprintSHA256(s.HostKey)) {
		t.Errorf("unknown host: code %d, %s", code, out)
	}
	other := sshdtest.Start(t)
	changed := filepath.Join(t.TempDir(), "kh")
	data, _ := os.ReadFile(other.KnownHosts)
	_, op, _ := net.SplitHostPort(other.Addr())
	_, sp, _ := net.SplitHostPort(s.Addr())
	os.WriteFile(changed, []byte(strings.Replace(string(data), op, sp, 1)), 0o600)
	out, code = execCLI(t, append(base, "-o", "UserKnownHostsFile="+changed, s.User+"@"+s.Addr())...)
	if code != exitHostKey || !strings.Contains(out, "HOST KEY CHANGED") {
		t.Errorf("changed key: code %d, %s", code, out)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	if out, code = execCLI(t, append(base, "-o", "UserKnownHostsFile="+s.KnownHosts, s.User+"@"+dead)...); code != exitConnect {
		t.Errorf("nothing listening: code %d, %s", code, out)
	}
	if _, code = execCLI(t, "status", "--no-such-flag"); code != exitUsage {
		t.Errorf("bad flag: code %d", code)
	}
	if _, code = execCLI(t, "status"); code != exitUsage {
		t.Errorf("no host: code %d", code)
	}
	out, code = execCLI(t, append(base, "-o", "UserKnownHostsFile="+s.KnownHosts, "--json", s.User+"@"+s.Addr())...)
	if code != 0 || !strings.Contains(out, `"schema": 1`) || !strings.Contains(out, `"state": "connected"`) {
		t.Errorf("status --json: code %d, %s", code, out)
	}
}
