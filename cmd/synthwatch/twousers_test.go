package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// hostUser is a unix account the test made (and removes).
type hostUser struct {
	Name     string
	UID, GID int
	Home     string
}

// addUser creates a local account for a two-user finding (root only: CI
// runs as root; elsewhere the test is skipped) and removes it, its home
// and its processes when the test ends. opts replace useradd's -m (a home
// made for it), e.g. "-M", "-d", "/nonexistent".
func addUser(t *testing.T, role string, opts ...string) hostUser {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("a two-user test needs root (useradd); CI runs as root")
		}
		t.Skip("a two-user test needs root (useradd)")
	}
	name := fmt.Sprintf("sw%s%d", role, os.Getpid()%100000)
	// "*": no password, yet not locked (sshd refuses a locked account)
	if len(opts) == 0 {
		opts = []string{"-m"}
	}
	if out, err := exec.Command("useradd", append(opts, "-s", "/bin/sh", "-p", "*", name)...).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v %s", name, err, out)
	}
	t.Cleanup(func() {
		exec.Command("pkill", "-KILL", "-u", name).Run() // its own processes only: the user is the test's
		exec.Command("userdel", "-r", "-f", name).Run()
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return hostUser{Name: name, UID: uid, GID: gid, Home: u.HomeDir}
}

// as runs argv as u, with u's HOME.
func (u hostUser) as(argv ...string) *exec.Cmd {
	c := exec.Command(argv[0], argv[1:]...)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}}
	c.Env = []string{"HOME=" + u.Home, "PATH=/usr/local/bin:/usr/bin:/bin", "USER=" + u.Name}
	c.Dir = "/"
	return c
}

// write writes data to p as u (a real write by that account, under its
// umask 022).
func (u hostUser) write(t *testing.T, p, data string) {
	t.Helper()
	c := u.as("sh", "-c", `umask 022 && mkdir -p "$(dirname "$1")" && cat > "$1"`, "sh", p)
	c.Stdin = strings.NewReader(data)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("write %s as %s: %v %s", p, u.Name, err, out)
	}
}

// twoUserLab is a real sshd that lets the test's client key in as any of
// the given users (their own authorized_keys file each), a shared
// directory every account may write (a team's data folder), and the
// binary there for everyone to run.
type twoUserLab struct {
	sshd   *sshdtest.Server
	shared string // 0777, as a team folder: holds the root and the binary
	bin    string
}

func newTwoUserLab(t *testing.T, users ...hostUser) *twoUserLab {
	t.Helper()
	testgate.E2E(t)
	keys, err := os.MkdirTemp("", "sw-keys-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(keys) })
	os.Chmod(keys, 0o755)
	s := sshdtest.Start(t, sshdtest.WithConfig("AuthorizedKeysFile "+keys+"/%u"))
	pub, err := os.ReadFile(filepath.Join(s.Dir, "authorized_keys"))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		p := filepath.Join(keys, u.Name)
		os.WriteFile(p, pub, 0o600)
		os.Chown(p, u.UID, u.GID)
	}
	shared, err := os.MkdirTemp("", "sw-team-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	os.Chmod(shared, 0o777)
	b, err := os.ReadFile(testbin.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(shared, "bin", "synthwatch")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	return &twoUserLab{sshd: s, shared: shared, bin: bin}
}

// cli runs a subcommand on the host as u, over the lab's sshd.
func (lab *twoUserLab) cli(t *testing.T, u hostUser, args ...string) (string, int) {
	t.Helper()
	argv := append([]string{args[0]}, sshArgs(t, lab.sshd)...)
	argv = append(argv, args[1:]...)
	return execCLI(t, append(argv, u.Name+"@"+lab.sshd.Addr())...)
}

// teamRoot is a pipeline root in the shared folder that every account may
// write, as a group-writable team folder is, with one category of n prompts.
func (lab *twoUserLab) teamRoot(t *testing.T, n int) string {
	root := filepath.Join(lab.shared, "root")
	dir := filepath.Join(root, "prepared", "A")
	os.MkdirAll(dir, 0o777)
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"id":%d,"messages":[{"role":"user","content":"q"}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(b.String()), 0o644)
	for _, d := range []string{root, filepath.Join(root, "prepared"), dir} {
		os.Chmod(d, 0o777)
	}
	return root
}
