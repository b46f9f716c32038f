// Package sshdtest starts a real OpenSSH sshd on a free loopback port for
// tests, with throwaway keys and a known_hosts that pins its host key.
//
// Without sshd the test is skipped, except under CI=true, where it fails:
// CI must prove the SSH code against the real thing.
package sshdtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Server is a running sshd.
type Server struct {
	Host       string // always 127.0.0.1
	Port       int
	User       string
	KeyPath    string // the client's private key (OpenSSH format, no passphrase)
	KnownHosts string // a known_hosts file that pins HostKey for Host:Port
	HostKey    ssh.PublicKey
	Dir        string // the temp dir with the config, keys and pid file
	home       string // the sessions' home when it is a temp dir (Home)

	t       testing.TB
	bin     string
	cfgPath string
	argv    func() []string // the command that runs the server (sshd, or dropbear in its namespace)
	keys    string          // the authorized_keys file the server reads
	pinned  []ssh.PublicKey // known_hosts pins these (HostKey when nil)
	mu      sync.Mutex
	cmd     *exec.Cmd
	log     *bytes.Buffer
	exited  chan struct{}
}

// Option changes the sshd configuration.
type Option func(*options)

type options struct {
	extra  []string
	noSFTP bool
	shell  string
}

// WithLoginShell makes path the user's login shell in the server's
// namespace (its /etc/passwd is a copy with that shell), as a user whose
// shell is zsh or fish has it: every exec's command line is that shell's.
// It needs root, as the clean home does (Home).
func WithLoginShell(path string) Option { return func(o *options) { o.shell = path } }

// Home is the home the server's sessions see: a temp dir bound over the
// user's (a test writes rc files there), or "" without root, where the
// sessions get the real one.
func (s *Server) Home() string { return s.home }

// needRoot fails (under CI) or skips a test that needs the server's own
// namespace.
func needRoot(t testing.TB, what string) {
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		if _, err := exec.LookPath("unshare"); err == nil {
			return
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s needs root and unshare (a mount namespace)", what)
	}
	t.Skipf("%s needs root and unshare (a mount namespace); skipped outside CI", what)
}

// shellPre is the namespace step that gives the user login shell sh: a
// copy of /etc/passwd bound over it.
func shellPre(t testing.TB, u *user.User, dir, sh string) []string {
	if sh == "" {
		return nil
	}
	needRoot(t, "WithLoginShell")
	pw, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(pw), "\n"), "\n") {
		f := strings.Split(l, ":")
		if len(f) == 7 && f[0] == u.Username {
			f[6] = sh
			l = strings.Join(f, ":")
		}
		out = append(out, l)
	}
	p := filepath.Join(dir, "passwd")
	if err := os.WriteFile(p, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"mount --bind " + p + " /etc/passwd"}
}

// WithoutSFTP starts Dropbear with no SFTP server, as a minimal host runs
// it (its /usr/lib/sftp-server is /dev/null in the server's namespace).
func WithoutSFTP() Option { return func(o *options) { o.noSFTP = true } }

// WithConfig adds raw sshd_config lines, e.g. "ClientAliveInterval 1".
func WithConfig(lines ...string) Option {
	return func(o *options) { o.extra = append(o.extra, lines...) }
}

// Binary returns the sshd path, or skips the test (fails it under CI=true).
func Binary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("sshd not found; install it with: apt-get install -y openssh-server")
	}
	t.Skip("sshd not found (apt-get install -y openssh-server); skipped outside CI")
	return ""
}

// Start starts sshd and stops it when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin := Binary(t)
	var o options
	for _, f := range opts {
		f(&o)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("sshdtest: privilege-separation dir: %v", err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshdtest: current user: %v", err)
	}
	dir := t.TempDir()
	s := &Server{Host: "127.0.0.1", User: u.Username, Dir: dir, t: t, bin: bin}
	hostKey := writeKey(t, filepath.Join(dir, "host_ed25519"))
	clientKey := writeKey(t, filepath.Join(dir, "client_ed25519"))
	s.HostKey, s.KeyPath = hostKey, filepath.Join(dir, "client_ed25519")
	s.keys = filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(s.keys, ssh.MarshalAuthorizedKey(clientKey), 0o600); err != nil {
		t.Fatal(err)
	}
	s.cfgPath = filepath.Join(dir, "sshd_config")
	pre := shellPre(t, u, dir, o.shell)
	s.home = cleanedHome(u, filepath.Join(dir, "home"))
	s.argv = func() []string {
		return cleanHome(t, u, filepath.Join(dir, "home"), []string{s.bin, "-D", "-e", "-f", s.cfgPath}, pre...)
	}
	s.listen(func() error {
		if err := os.WriteFile(s.cfgPath, []byte(s.config(o.extra)), 0o600); err != nil {
			return err
		}
		if out, err := exec.Command(s.bin, "-t", "-f", s.cfgPath).CombinedOutput(); err != nil {
			return fmt.Errorf("sshd -t rejected the config: %v: %s", err, out)
		}
		return nil
	})
	return s
}

// cleanHome runs a server's argv so that its sessions see an empty home:
// the user's rc files (root's pyenv init here, a second or more a shell,
// and a lock that a killed shell leaves behind) neither slow nor break a
// test, on this machine or a user's. It needs root (a mount namespace of
// the server's own, where a temp dir is bound over the home); without it
// the sessions get the real home.
// cleanedHome is home when cleanHome binds it, else "".
func cleanedHome(u *user.User, home string) string {
	if u.Uid != "0" || u.HomeDir == "" || u.HomeDir == "/" {
		return ""
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return ""
	}
	return home
}

func cleanHome(t testing.TB, u *user.User, home string, argv []string, pre ...string) []string {
	if u.Uid != "0" || u.HomeDir == "" || u.HomeDir == "/" {
		return argv
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return argv
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	script := `mount --bind "$1" "$2" && shift 2 && exec "$@"`
	for _, p := range pre {
		script = p + " && " + script
	}
	return append([]string{"unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", home, u.HomeDir}, argv...)
}

// listen picks a free port (prepare writes what the server needs for it),
// starts the server there, pins its host key and stops it when the test ends.
func (s *Server) listen(prepare func() error) {
	t := s.t
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s.Port = freePort(t)
		if lastErr = prepare(); lastErr != nil {
			break
		}
		if lastErr = s.start(); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("sshdtest: %v", lastErr)
	}
	s.KnownHosts = filepath.Join(s.Dir, "known_hosts")
	pinned := s.pinned
	if pinned == nil {
		pinned = []ssh.PublicKey{s.HostKey}
	}
	var lines string
	for _, k := range pinned {
		lines += knownhosts.Line([]string{knownhosts.Normalize(s.Addr())}, k) + "\n"
	}
	if err := os.WriteFile(s.KnownHosts, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("%s log:\n%s", filepath.Base(s.bin), s.Log())
		}
	})
}

// Addr is "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Log returns what sshd printed so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

func (s *Server) config(extra []string) string {
	lines := []string{
		"Port " + strconv.Itoa(s.Port),
		"ListenAddress 127.0.0.1",
		"HostKey " + filepath.Join(s.Dir, "host_ed25519"),
		"PidFile " + filepath.Join(s.Dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(s.Dir, "authorized_keys"),
		"StrictModes no",
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"AllowTcpForwarding yes",
		"MaxSessions 100",
		"MaxStartups 100",
		"Subsystem sftp internal-sftp",
		"LogLevel VERBOSE",
	}
	// sshd keeps the first value of a keyword: extra lines go first to win
	return strings.Join(append(append([]string{}, extra...), lines...), "\n") + "\n"
}

// start runs the server and waits until it accepts connections.
func (s *Server) start() error {
	argv := s.argv()
	cmd := exec.Command(argv[0], argv[1:]...)
	log := &bytes.Buffer{}
	w := &lockedWriter{mu: &s.mu, w: log}
	cmd.Stdout, cmd.Stderr = w, w
	// a session process that escaped the tree's kill (re-parented before
	// Stop listed it) holds the log pipe: Wait gives up on it after this,
	// so Stop is bounded (it waited 9 minutes once, under load)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", filepath.Base(argv[0]), err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.log, s.exited = cmd, log, exited
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("%s exited at start: %s", filepath.Base(argv[0]), s.Log())
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return fmt.Errorf("%s did not listen on %s within 10s: %s", filepath.Base(argv[0]), s.Addr(), s.Log())
}

// Stop ends sshd and the sessions it serves. Safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	// sshd forks processes per connection, which hold its log pipe: end the
	// whole tree (found before the parent dies and they are re-parented), so
	// a restart really drops every session and Wait returns. The sessions
	// get SIGTERM and a moment first, as a host's sshd stopping gives them:
	// a login shell killed outright inside its rc files leaves their locks
	// behind (root's pyenv rehash lock, left so, made every later shell on
	// the CI machine wait 60 s).
	tree := Descendants(cmd.Process.Pid)
	for _, pid := range tree {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	waitGone(tree, 3*time.Second)
	tree = append(tree, Descendants(cmd.Process.Pid)...)
	_ = cmd.Process.Kill()
	for _, pid := range tree {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-exited
}

// waitGone waits until none of pids runs (a zombie counts as gone).
func waitGone(pids []int, limit time.Duration) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		left := false
		for _, pid := range pids {
			if running(pid) {
				left = true
				break
			}
		}
		if !left {
			return
		}
	}
}

func running(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// Restart stops sshd and starts it again on the same port with the same keys.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	for i := 0; i < 50; i++ { // the port may linger briefly
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("sshdtest: restart: %v", err)
}

// Descendants lists every process below root, from /proc.
func Descendants(root int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// the parent pid is the 2nd field after "pid (comm)"
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(root)
	return out
}

func writeKey(t testing.TB, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "sshdtest")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sp), 0o644); err != nil {
		t.Fatal(err)
	}
	return sp
}

// freePort asks the kernel for a free loopback port.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w.Len() > 1<<20 { // bound the log of a long test
		return len(p), nil
	}
	return l.w.Write(p)
}

// Authorize adds an authorized_keys line (e.g. a .pub file's content).
func (s *Server) Authorize(line []byte) {
	s.t.Helper()
	f, err := os.OpenFile(s.keys, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(bytes.TrimSpace(line), '\n')); err != nil {
		s.t.Fatal(err)
	}
}

// Banners are login shells whose rc files print on both streams before
// any command, as shared GPU hosts' do (a MOTD, a conda or module
// notice, one line without a newline): each shell's path and the rc
// files it reads for an exec's command, relative to the home.
var Banners = []struct {
	Name, Shell string
	RC          map[string]string
}{
	{"bash", "/bin/bash", map[string]string{".bashrc": "echo 'Welcome to gpu-box: bashrc'\necho 'bashrc: module loaded cuda/12' >&2\nprintf '*** {no newline} ***'\nprintf '*** err, no newline' >&2\n"}},
	{"zsh", "/usr/bin/zsh", map[string]string{".zshenv": "echo 'Welcome to gpu-box: zshenv'\necho 'zshenv: (base) conda activated' >&2\nprintf '*** {no newline} ***'\nprintf '*** err, no newline' >&2\n"}},
	{"fish", "/usr/bin/fish", map[string]string{".config/fish/config.fish": "echo 'Welcome to gpu-box: config.fish'\necho 'fish: module loaded cuda/12' >&2\nprintf '*** {no newline} ***'\nprintf '*** err, no newline' >&2\n"}},
	// tcsh ends a command at a newline even inside single quotes: the
	// first multi-line command of a connection is refused ("Unmatched
	// '''."), which teaches it the shell (remote.SSH.NoteLoginCsh)
	{"tcsh", "/usr/bin/tcsh", map[string]string{".tcshrc": "echo 'Welcome to gpu-box: tcshrc'\necho 'tcshrc: module loaded cuda/12' > /dev/stderr\nprintf '*** {no newline} ***'\nprintf '*** err, no newline' > /dev/stderr\n"}},
}

// WriteRC writes rc files (paths relative to the sessions' home).
func (s *Server) WriteRC(t testing.TB, rc map[string]string) {
	t.Helper()
	if s.home == "" {
		needRoot(t, "WriteRC")
	}
	for p, body := range rc {
		full := filepath.Join(s.home, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
