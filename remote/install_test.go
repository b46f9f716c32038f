package remote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/agentproto"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// agentDir is where the launcher looks for the installed agent under home.
func agentDir(home string) string {
	return filepath.Join(home, ".cache", "synthwatch", "agent", strings.TrimPrefix(AgentProto, "synthwatch-agent/")+"-"+runtime.GOOS+"-"+runtime.GOARCH)
}

// sshdHome is an sshd whose sessions see a temp home of their own.
func sshdHome(t *testing.T, o ...sshdtest.Option) (*sshdtest.Server, *SSH, string) {
	t.Helper()
	s := sshdtest.Start(t, o...)
	if s.Home() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("the install tests need the server's own home (root and unshare)")
		}
		t.Skip("the install tests need the server's own home (root and unshare); skipped outside CI")
	}
	return s, dial(t, opts(t, s)), s.Home()
}

func loadBatch() *Batch {
	b := &Batch{}
	b.Cat("/proc/loadavg", 100)
	return b
}

// installingAgent is an agent of h with no binary of its own and install on,
// after its first poll: the launcher found none, the poll has its answer,
// and the copy is under way.
func installingAgent(t *testing.T, h Host) *Agent {
	t.Helper()
	ag := missingAgent(t, h)
	ag.StartInstall()
	return ag
}

// waitInstalled waits up to a minute for ag's install to end, and fails
// the test if it did not take.
func waitInstalled(t *testing.T, ag *Agent) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, ok := ag.Installed(); ok {
			break
		}
		if k := ag.Kind(); strings.Contains(k, "not installed") || time.Now().After(deadline) {
			t.Fatalf("the install: %s", k)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// missingAgent is installingAgent before the poll had its answer: the
// copy is asked for, not begun.
func missingAgent(t *testing.T, h Host) *Agent {
	t.Helper()
	ag := NewAgent(h)
	ag.UseBinary("/nonexistent/synthwatch")
	ag.AutoInstall(true)
	t.Cleanup(ag.Close)
	if _, err := ag.Run(context.Background(), loadBatch()); !errors.Is(err, ErrNoAgent) {
		t.Fatal(err)
	}
	return ag
}

// A host with no agent of this protocol: the first poll is answered by
// the fallback while the agent is on its way (the kind says so), the
// copy begun once that poll has its answer, and a poll after the copy by
// the installed Go agent, from its version's path, made for the user
// alone; no temp file is left.
func TestAgentInstalledWhenMissing(t *testing.T) {
	t.Parallel()
	_, h, home := sshdHome(t)
	ag := missingAgent(t, h)
	if k := ag.Kind(); !strings.HasPrefix(k, "fallback (") || !strings.Contains(k, "installing the agent") {
		t.Fatalf("the first poll was read by %q, want the fallback, saying the agent is on its way", k)
	}
	ag.mu.Lock()
	in := ag.inst
	ag.mu.Unlock()
	select {
	case <-in.start:
		t.Fatal("the copy began before the poll that asked for it had its answer")
	default:
	}
	if n := in.sent.Load(); n != 0 {
		t.Fatalf("%d bytes of the agent sent before the poll had its answer", n)
	}
	ag.StartInstall()
	waitInstalled(t, ag)
	res, _ := ag.Installed()
	want := filepath.Join(agentDir(home), "synthwatch")
	if !strings.HasSuffix(res.Path, strings.TrimPrefix(want, home)) { // the host names it under its $HOME
		t.Errorf("installed to %s", res.Path)
	}
	if res.Bytes <= 0 || res.Bytes >= res.Size {
		t.Errorf("%d bytes crossed for an agent of %d: not compressed", res.Bytes, res.Size)
	}
	fi, err := os.Stat(want)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the installed agent: %v %v", fi, err)
	}
	ents, _ := os.ReadDir(agentDir(home))
	if len(ents) != 1 {
		t.Errorf("the agent's folder holds %d entries, want the agent alone", len(ents))
	}
	if _, err := ag.Run(context.Background(), loadBatch()); err != nil {
		t.Fatal(err)
	}
	if k := ag.Kind(); !strings.HasPrefix(k, "go ") || !strings.Contains(k, ".cache/synthwatch/agent/") {
		t.Fatalf("after the install the poll was read by %q, want the installed agent", k)
	}
}

// The copy goes in parts on channels at once (a channel moves one server
// window a round trip: Dropbear's is 24 KB). A server that allows two
// sessions a connection refuses most of them: each refused part waits for
// a channel that finished, and the agent arrives whole, nothing left
// beside it.
func TestAgentInstallTakesTheChannelsAllowed(t *testing.T) {
	t.Parallel()
	_, h, home := sshdHome(t, sshdtest.WithConfig("MaxSessions 2"))
	ag := installingAgent(t, h)
	res, err, _ := ag.WaitInstall(context.Background())
	if err != nil {
		t.Fatalf("install with two sessions allowed: %v", err)
	}
	if parts := (res.Bytes + installPartMin - 1) / installPartMin; parts < 3 {
		t.Fatalf("a copy of %d bytes goes in %d parts: the test needs several", res.Bytes, parts)
	}
	if ents, _ := os.ReadDir(agentDir(home)); len(ents) != 1 {
		t.Errorf("the agent's folder holds %d entries, want the agent alone", len(ents))
	}
	if _, err := ag.Run(context.Background(), loadBatch()); err != nil || !strings.HasPrefix(ag.Kind(), "go ") {
		t.Fatalf("after the install: %q %v", ag.Kind(), err)
	}
}

// A file in the agent's place that is not safe to run (a folder anyone
// may write, a file of another user's) is refused and named, never run,
// and not replaced.
func TestAgentInstalledRefusedWhenLoose(t *testing.T) {
	t.Parallel()
	for name, loosen := range map[string]func(dir, bin string) error{
		"shared cache folder": func(dir, _ string) error { return os.Chmod(filepath.Dir(dir), 0o777) },
		"group-writable file": func(_, bin string) error { return os.Chmod(bin, 0o775) },
		"another user's file": func(_, bin string) error { return os.Chown(bin, 65534, 65534) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, h, home := sshdHome(t)
			dir := agentDir(home)
			must(t, os.MkdirAll(dir, 0o700))
			ran := filepath.Join(home, "planted-ran")
			bin := filepath.Join(dir, "synthwatch")
			writeFile(t, bin, "#!/bin/sh\ntouch '"+ran+"'\n")
			must(t, os.Chmod(bin, 0o700))
			must(t, loosen(dir, bin))
			ag := installingAgent(t, h)
			k := ag.Kind()
			if !strings.Contains(k, "refused to run the agent") || !strings.Contains(k, "StrictModes") || !strings.Contains(k, "mode ") || !strings.Contains(k, "uid ") {
				t.Fatalf("kind %q: the refusal does not say what and why", k)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Fatal("the planted agent ran")
			}
			if b, _ := os.ReadFile(bin); !strings.Contains(string(b), "touch") {
				t.Fatal("the planted file was replaced: an install into a loose folder")
			}
		})
	}
}

// A host of a platform this laptop has no build of (an arm64 host, by a
// uname shim): the build beside the executable is named, else the
// command that makes it.
func TestAgentBuildForTheHost(t *testing.T) {
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	if other == "" {
		t.Skip("the test knows amd64 and arm64 hosts")
	}
	if _, err := AgentBuild("linux", other); err == nil || !strings.Contains(err.Error(), "GOOS=linux GOARCH="+other+" CGO_ENABLED=0 go build -o ") {
		t.Fatalf("no build for linux/%s: %v", other, err)
	}
	if p, err := AgentBuild(runtime.GOOS, runtime.GOARCH); err != nil || p == "" {
		t.Fatalf("this platform's build: %q %v", p, err)
	}
	// the host says it is the other arch: the launcher keys the path by it
	shim := t.TempDir()
	m := map[string]string{"arm64": "aarch64", "amd64": "x86_64"}[other]
	writeFile(t, filepath.Join(shim, "uname"), "#!/bin/sh\ncase $1 in -m) echo "+m+";; -s) echo Linux;; *) echo Linux "+m+";; esac\n")
	must(t, os.Chmod(filepath.Join(shim, "uname"), 0o755))
	home := t.TempDir()
	t.Setenv("PATH", shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("HOME", home)
	ag := installingAgent(t, Local{})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(ag.Kind(), "not installed") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if k := ag.Kind(); !strings.Contains(k, "linux/"+other) || !strings.Contains(k, "GOARCH="+other) {
		t.Fatalf("kind %q: the host's platform and the command that builds for it", k)
	}
	if _, err := os.Stat(filepath.Join(home, ".cache", "synthwatch", "agent", strings.TrimPrefix(agentproto.Proto, "synthwatch-agent/")+"-linux-"+other)); err == nil {
		t.Error("a folder was made for a build that was not there")
	}
}

// Over Dropbear with no SFTP server the copy goes the same way (stdin of
// one exec); with install off nothing is copied and no folder made; where
// the cache cannot be written the fallback goes on reading and the kind
// says why the agent is not there.
func TestAgentInstallDropbearOffAndUnwritable(t *testing.T) {
	t.Parallel()
	t.Run("dropbear", func(t *testing.T) {
		t.Parallel()
		s := sshdtest.StartDropbear(t, sshdtest.WithoutSFTP())
		h := dial(t, opts(t, s))
		ag := installingAgent(t, h)
		if _, err, _ := ag.WaitInstall(context.Background()); err != nil {
			t.Fatalf("install over dropbear: %v", err)
		}
		if ents, _ := os.ReadDir(agentDir(s.Home())); len(ents) != 1 {
			t.Errorf("the agent's folder holds %d entries, want the agent alone", len(ents))
		}
		if _, err := ag.Run(context.Background(), loadBatch()); err != nil || !strings.HasPrefix(ag.Kind(), "go ") {
			t.Fatalf("after the install over dropbear: %q %v", ag.Kind(), err)
		}
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		_, h, home := sshdHome(t)
		ag := NewAgent(h)
		ag.UseBinary("/nonexistent/synthwatch")
		t.Cleanup(ag.Close)
		for range 2 {
			if _, err := ag.Run(context.Background(), loadBatch()); !errors.Is(err, ErrNoAgent) {
				t.Fatal(err)
			}
		}
		if _, _, started := ag.WaitInstall(context.Background()); started || ag.Kind() != "fallback" {
			t.Fatalf("install off: started %v, kind %q", started, ag.Kind())
		}
		if _, err := os.Stat(filepath.Join(home, ".cache", "synthwatch", "agent")); err == nil {
			t.Fatal("install off made the agent's folder")
		}
	})
	t.Run("unwritable", func(t *testing.T) {
		t.Parallel()
		_, h, home := sshdHome(t)
		writeFile(t, filepath.Join(home, ".cache"), "a file where the cache folder goes\n") // mkdir fails, even for root
		ag := installingAgent(t, h)
		if _, err, _ := ag.WaitInstall(context.Background()); err == nil {
			t.Fatal("an install into a cache that cannot be made succeeded")
		}
		if _, err := ag.Run(context.Background(), loadBatch()); !errors.Is(err, ErrNoAgent) || ag.Usable() {
			t.Fatalf("the agent after a failed install: %v", err)
		}
		b := loadBatch()
		if err := NewFallback(h).Run(context.Background(), b); err != nil {
			t.Fatalf("the fallback after a failed install: %v", err)
		}
		if r, ok := b.cats[0].Result(); !ok || r.Err != nil || len(r.Data) == 0 {
			t.Fatalf("the fallback after a failed install: %v %q %v", ok, r.Data, r.Err)
		}
		if k := ag.Kind(); !strings.Contains(k, "the agent was not installed") {
			t.Fatalf("kind %q: the failure is not said", k)
		}
	})
}
