package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// The platform the agent's hello named is kept in the hint, and the next
// run tells it to the launcher (no uname), with the digest of the
// programs it carries (its first request names them); a told platform whose agent
// does not start (a home shared with a host of another arch) costs that
// poll to the fallback and the hint its platform, not "no agent": the
// poll after it finds the agent by uname.
func TestHintTellsTheLauncherThePlatform(t *testing.T) {
	s := homeServer(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	root, url, _ := coldRoot(t)
	hint := filepath.Join(t.TempDir(), "hint.json")
	watcher := func() (*Watcher, func() string) {
		h := p.dial(t)
		t.Cleanup(func() { h.Close() })
		w := NewWatcher(h, Options{Host: "h", Root: root, ServerURL: url, WorkerBin: filepath.Join(root, "absent"), InstallAgent: true, HintPath: hint}, nil)
		return w, func() string { return w.Poll(context.Background()).Connection.Reader }
	}
	_, poll := watcher()
	for deadline := time.Now().Add(2 * time.Minute); !strings.HasPrefix(poll(), "go agent "); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the agent was not installed in 2 minutes")
		}
	}
	plat := runtime.GOOS + "-" + runtime.GOARCH
	h := ReadServersHint(hint)
	if h == nil || h.Platform != plat || h.NoAgent != "" || h.AgentProgs == "" {
		t.Fatalf("the hint after the agent's answer: %+v, want the platform %s and the programs' digest", h, plat)
	}
	w, poll := watcher()
	if got := w.agent.Platform(); got != plat {
		t.Fatalf("the next run's agent was told %q, want the hint's %q", got, plat)
	}
	if got := w.agent.Progs(); got != h.AgentProgs {
		t.Fatalf("the next run's agent was told the programs %q, want the hint's %q", got, h.AgentProgs)
	}
	if r := poll(); !strings.HasPrefix(r, "go agent ") || !strings.Contains(r, "-"+plat+"/synthwatch") {
		t.Fatalf("told its platform, the poll was read by %q", r)
	}

	// a platform whose agent cannot run here
	dir := filepath.Join(s.Home(), ".cache", "synthwatch", "agent", strings.TrimPrefix(remote.AgentProto, "synthwatch-agent/")+"-linux-mips64")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "synthwatch"), []byte("\x7fELF\x02\x01\x01 another arch's\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hint, []byte(`{"platform":"linux-mips64"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, poll = watcher()
	if r := poll(); !strings.HasPrefix(r, "fallback") {
		t.Fatalf("told a platform whose agent cannot start, the poll was read by %q", r)
	}
	if h := ReadServersHint(hint); h == nil || h.Platform != "" || h.NoAgent != "" {
		t.Fatalf("the hint after the told agent failed: %+v, want neither a platform nor no agent", h)
	}
	if r := poll(); !strings.HasPrefix(r, "go agent ") || !strings.Contains(r, "-"+plat+"/synthwatch") {
		t.Fatalf("the poll after: read by %q, want this host's agent", r)
	}
}

// A csh login (tcsh) is learnt by the first poll that sends a newline on
// its line (remote.SSH.NoteLoginCsh), kept in the hint, and the next run's
// link knows it before its first command.
func TestHintKeepsACshLogin(t *testing.T) {
	tcsh := sshdtest.Banners[len(sshdtest.Banners)-1]
	if tcsh.Name != "tcsh" {
		t.Fatalf("the last banner shell is %s, want tcsh", tcsh.Name)
	}
	s := sshdtest.Start(t, sshdtest.WithLoginShell(tcsh.Shell))
	s.WriteRC(t, tcsh.RC)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	root, url, _ := coldRoot(t)
	hint := filepath.Join(t.TempDir(), "hint.json")
	for run := range 2 {
		h := p.dial(t)
		w := NewWatcher(h, Options{Host: "h", Root: root, ServerURL: url, WorkerBin: filepath.Join(root, "absent"), HintPath: hint}, nil)
		if h.LoginCsh() != (run == 1) {
			t.Fatalf("run %d: the link took its login shell for csh's before a command: %v", run, h.LoginCsh())
		}
		snap := w.Poll(context.Background())
		if len(snap.Categories) != 5 || !h.LoginCsh() {
			t.Fatalf("run %d: %d categories, read by %q, csh learnt %v", run, len(snap.Categories), snap.Connection.Reader, h.LoginCsh())
		}
		if hh := ReadServersHint(hint); hh == nil || !hh.LoginCsh {
			t.Fatalf("run %d: the hint %+v does not keep the csh login", run, hh)
		}
		h.Close()
	}
}
