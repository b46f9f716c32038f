package remote

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"golang.org/x/crypto/ssh"
)

func TestOperationsOverRealSSHD(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	h := dial(t, opts(t, s))
	ctx := context.Background()
	if st := h.State(); st.Phase != Connected || st.LastContact.IsZero() {
		t.Fatalf("state %v", st)
	}
	hostile := "a b'c$(touch /tmp/synthwatch-pwned)`x`\"; rm -rf /"
	r, err := h.Exec(ctx, "printf", "%s", hostile)
	if err != nil || string(r.Stdout) != hostile || r.ExitCode != 0 {
		t.Fatalf("exec quoting: %q %v", r.Stdout, err)
	}
	if _, err := os.Stat("/tmp/synthwatch-pwned"); err == nil {
		t.Fatal("an argument was executed")
	}
	r, err = h.Exec(ctx, "sh", "-c", "echo err >&2; exit 7")
	if err != nil || r.ExitCode != 7 || string(r.Stderr) != "err\n" {
		t.Fatalf("exit status: %+v %v", r, err)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "f.jsonl")
	writeFile(t, p, "0123456789")
	fi, err := h.Stat(ctx, p)
	if err != nil || fi.Size != 10 {
		t.Fatalf("stat %+v %v", fi, err)
	}
	if _, err := h.Stat(ctx, filepath.Join(dir, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	data, err := h.ReadAt(ctx, p, 3, 100)
	if err != nil || string(data) != "3456789" {
		t.Fatalf("readat %q %v", data, err)
	}
	m, err := h.Glob(ctx, filepath.Join(dir, "*.jsonl"))
	if err != nil || len(m) != 1 || m[0] != p {
		t.Fatalf("glob %v %v", m, err)
	}
	if err := h.WriteFile(ctx, filepath.Join(dir, "bin"), []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(dir, "bin")).Output(); err != nil || string(out) != "hi\n" {
		t.Fatalf("written file: %q %v", out, err)
	}

	// direct-tcpip: the host's 127.0.0.1:port, as for the server's /metrics
	forwardedMetrics(t, h)
	if w := h.Wire(); w.Sent == 0 || w.Received == 0 {
		t.Errorf("wire stats %+v", w)
	}
}

func TestUnknownHostKeyRefusedWithFingerprint(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	o := opts(t, s)
	empty := filepath.Join(t.TempDir(), "known_hosts")
	o.Opts = []string{"UserKnownHostsFile=" + empty, "StrictHostKeyChecking=yes"}
	_, err := Dial(context.Background(), o)
	var hk *HostKeyError
	if !errors.As(err, &hk) || hk.Changed || !strings.Contains(err.Error(), ssh.FingerprintSHA256(s.HostKey)) || !Fatal(err) {
		t.Fatalf("want unknown-host refusal with fingerprint, got %v", err)
	}
	// ask, and the person says no (the default)
	o.Opts = []string{"UserKnownHostsFile=" + empty}
	o.Prompt = answer{confirm: false}
	if _, err := Dial(context.Background(), o); !errors.As(err, &hk) {
		t.Fatalf("declined prompt: %v", err)
	}
	// ask, and the person says yes: the key is added
	o.Prompt = answer{confirm: true}
	h := dial(t, o)
	h.Close()
	data, _ := os.ReadFile(empty)
	if !strings.Contains(string(data), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.HostKey)))) {
		t.Fatalf("key not added: %s", data)
	}
	// accept-new, without any prompt
	other := filepath.Join(t.TempDir(), "kh")
	o.Prompt = nil
	o.Opts = []string{"UserKnownHostsFile=" + other, "StrictHostKeyChecking=accept-new"}
	dial(t, o).Close()
	if data, _ := os.ReadFile(other); len(data) == 0 {
		t.Fatal("accept-new did not record the key")
	}
}

func TestChangedHostKeyAlwaysRefused(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	other := sshdtest.Start(t)
	o := opts(t, s)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	data, _ := os.ReadFile(other.KnownHosts)
	writeFile(t, kh, strings.Replace(string(data), other.Addr()[len("127.0.0.1:"):], s.Addr()[len("127.0.0.1:"):], 1))
	for _, strict := range []string{"yes", "accept-new", "no", "ask"} {
		o.Opts = []string{"UserKnownHostsFile=" + kh, "StrictHostKeyChecking=" + strict}
		o.Prompt = answer{confirm: true}
		_, err := Dial(context.Background(), o)
		var hk *HostKeyError
		if !errors.As(err, &hk) || !hk.Changed || !strings.Contains(err.Error(), ssh.FingerprintSHA256(s.HostKey)) {
			t.Fatalf("strict=%s: want changed-key refusal, got %v", strict, err)
		}
	}
	// in the background it fails once and never retries
	h, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	waitPhase(t, h, Failed, 10*time.Second)
	time.Sleep(1500 * time.Millisecond)
	if st := h.State(); st.Phase != Failed || st.Attempt > 1 || !strings.Contains(st.Err, "HOST KEY CHANGED") {
		t.Fatalf("state %+v", st)
	}
}

type answer struct {
	confirm bool
	pass    string
}

func (a answer) ConfirmHostKey(string, string, string) (bool, error) { return a.confirm, nil }
func (a answer) Passphrase(string) ([]byte, error)                   { return []byte(a.pass), nil }

func TestEncryptedKeyFile(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	key := filepath.Join(t.TempDir(), "id_enc")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "s3cret", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	pub, _ := os.ReadFile(key + ".pub")
	s.Authorize(pub)
	o := opts(t, s)
	o.Identities = []string{key}
	_, err := Dial(context.Background(), o)
	var ae *AuthError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "encrypted") {
		t.Fatalf("no prompter: %v", err)
	}
	o.Prompt = answer{pass: "wrong"}
	if _, err := Dial(context.Background(), o); !errors.As(err, &ae) {
		t.Fatalf("wrong passphrase: %v", err)
	}
	o.Prompt = answer{pass: "s3cret"}
	dial(t, o)
}

func TestAgentAuth(t *testing.T) {
	s := sshdtest.Start(t)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatalf("ssh-agent: %v", err)
	}
	defer func() { agent.Process.Kill(); agent.Wait() }()
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	add := exec.Command("ssh-add", s.KeyPath)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	o := opts(t, s)
	o.Identities = nil // only the agent has the key
	o.Opts = slices.DeleteFunc(o.Opts, func(v string) bool { return v == "IdentityAgent=none" })
	t.Setenv("SSH_AUTH_SOCK", sock)
	h := dial(t, o)
	if r, err := h.Exec(context.Background(), "echo", "ok"); err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("exec via agent auth: %v", err)
	}
	// IdentityAgent=none turns the agent off: then there is no key at all
	var ae *AuthError
	off := o
	off.Opts = append([]string{"IdentityAgent=none"}, o.Opts...)
	if _, err := Dial(context.Background(), off); !errors.As(err, &ae) {
		t.Fatalf("no keys: %v", err)
	}
	// IdentityAgent names the socket (as with 1Password or Secretive), with
	// or without SSH_AUTH_SOCK, through ssh -G and through the Go parser
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("SW_TEST_AGENT", sock)
	for _, bin := range []string{"", "none"} {
		for _, v := range []string{sock, "$SW_TEST_AGENT"} {
			named := o
			named.SSHBinary = bin
			named.Opts = append([]string{"IdentityAgent=" + v}, o.Opts...)
			dial(t, named).Close()
		}
	}
	if _, err := Dial(context.Background(), o); !errors.As(err, &ae) {
		t.Fatalf("no agent, no keys: %v", err)
	}
}

func TestAliasWithIncludeAndMatchViaSSHG(t *testing.T) {
	s := sshdtest.Start(t)
	dir := t.TempDir()
	host, port, _ := net.SplitHostPort(s.Addr())
	writeFile(t, filepath.Join(dir, "gpu.conf"), "Host gpubox\n  HostName "+host+"\n  Port "+port+"\n  User "+s.User+
		"\n  IdentityFile "+s.KeyPath+"\n  UserKnownHostsFile "+s.KnownHosts+"\n")
	writeFile(t, filepath.Join(dir, "config"), "Include "+filepath.Join(dir, "gpu.conf")+
		"\nMatch originalhost gpubox\n  ServerAliveInterval 7\n  ServerAliveCountMax 5\n")
	o := Options{Target: "gpubox", ConfigFile: filepath.Join(dir, "config"), Home: t.TempDir()}
	t.Setenv("SSH_AUTH_SOCK", "")
	c, err := Resolve(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "ssh -G" || c.Addr() != s.Addr() || c.User != s.User || c.ServerAliveInterval != 7*time.Second || c.ServerAliveCountMax != 5 || c.StrictHostKey != "ask" {
		t.Fatalf("resolved %+v", c)
	}
	h := dial(t, o)
	if r, err := h.Exec(context.Background(), "echo", "ok"); err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("exec: %v", err)
	}
	// the Go parser reads the same alias (without Match, which it cannot do)
	o.SSHBinary = "none"
	c2, err := Resolve(context.Background(), o)
	if err == nil && (c2.Addr() != s.Addr() || c2.Source != "ssh_config") {
		t.Fatalf("parser: %+v", c2)
	}
}

func TestResolveFlagsAndExpansion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "config"), "Host box\n  HostName 127.0.0.9\n  IdentityFile ~/.ssh/id_%r_%h\n")
	for _, bin := range []string{"", "none"} {
		o := Options{Target: "alice@box", ConfigFile: filepath.Join(dir, "config"), Home: "/home/x", SSHBinary: bin, Port: 2200,
			Opts: []string{"ServerAliveInterval=9", "UserKnownHostsFile=~/kh_%p"}}
		c, err := Resolve(context.Background(), o)
		if err != nil {
			t.Fatal(bin, err)
		}
		// ssh -G expands ~ in UserKnownHostsFile itself, with the account's home, as the user's ssh does
		if c.User != "alice" || c.HostName != "127.0.0.9" || c.Port != 2200 || c.ServerAliveInterval != 9*time.Second ||
			c.IdentityFiles[0] != "/home/x/.ssh/id_alice_127.0.0.9" || !strings.HasSuffix(c.KnownHostsFiles[0], "/kh_2200") || strings.HasPrefix(c.KnownHostsFiles[0], "~") {
			t.Fatalf("ssh=%q resolved %+v", bin, c)
		}
	}
	if _, err := Resolve(context.Background(), Options{Target: "-oProxyCommand=x"}); err == nil {
		t.Fatal("a target starting with - was accepted")
	}
	// -p and HOST:PORT that disagree: which one was meant is not guessed
	if _, err := Resolve(context.Background(), Options{Target: "root@127.0.0.1:1", Port: 2200, SSHBinary: "none"}); err == nil || !strings.Contains(err.Error(), "-p 2200 and :1") {
		t.Fatalf("two ports: %v", err)
	}
	if c, err := Resolve(context.Background(), Options{Target: "root@127.0.0.1:2200", Port: 2200, SSHBinary: "none", Home: dir}); err != nil || c.Port != 2200 {
		t.Fatalf("one port twice: %+v %v", c, err)
	}
}

func TestProxyJumpThroughSecondSSHD(t *testing.T) {
	t.Parallel()
	jump := sshdtest.Start(t, sshdtest.WithConfig("LogLevel DEBUG1")) // logs each direct-tcpip target
	target := sshdtest.Start(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	a, _ := os.ReadFile(jump.KnownHosts)
	b, _ := os.ReadFile(target.KnownHosts)
	writeFile(t, kh, string(a)+string(b))
	o := opts(t, target)
	o.Identities = []string{jump.KeyPath, target.KeyPath}
	o.Opts = []string{"UserKnownHostsFile=" + kh, "StrictHostKeyChecking=yes"}
	o.Jump = jump.User + "@" + jump.Addr()
	h := dial(t, o)
	if r, err := h.Exec(context.Background(), "echo", "ok"); err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("exec through jump: %v", err)
	}
	_, tport, _ := net.SplitHostPort(target.Addr())
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(jump.Log(), "target 127.0.0.1 port "+tport) {
		if time.Now().After(deadline) {
			t.Fatalf("the jump host never forwarded to the target (%d bytes of log):\n%.3000s", len(jump.Log()), jump.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
