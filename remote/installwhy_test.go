package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// tmpfsHome mounts a tmpfs of size for the user alone (read only if ro)
// before the sshd that must see it starts, and unmounts it at the end.
func tmpfsHome(t *testing.T, size string, ro bool) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("mounting a tmpfs needs root; CI runs as root")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "mode=0700,size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	if ro {
		if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
			t.Fatalf("remount ro: %v %s", err, out)
		}
	}
	return dir
}

// installWhy installs the agent over an sshd whose sessions' HOME is home
// ("" for the server's own) after prepare, and gives where the agent
// would have gone and the error.
func installWhy(t *testing.T, home string, prepare func(home string)) (string, error) {
	t.Helper()
	var o []sshdtest.Option
	if home != "" {
		o = append(o, sshdtest.WithConfig("SetEnv HOME="+home))
	}
	_, h, own := sshdHome(t, o...)
	if home == "" { // the sessions see it at the user's own path
		home = own
	}
	if prepare != nil {
		prepare(home)
	}
	place, err := ProbeAgentPlace(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	_, err = InstallAgent(context.Background(), h, place, nil, nil)
	return place.Dir, err
}

// The agent's install says why it could not write, as deploy does: a full
// disk (free against the agent's size), a read-only file system (its
// mount point); and it refuses a cache folder others may write, where the
// launcher would refuse the agent and run another synthwatch instead,
// naming which, before it writes anything.
func TestAgentInstallSaysWhy(t *testing.T) {
	t.Run("full disk", func(t *testing.T) {
		dir, err := installWhy(t, tmpfsHome(t, "2m", false), nil)
		want := "install the agent to " + dir + ": the file system holding " + dir + " has no room for the agent: "
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "KB (df -k)") {
			t.Errorf("install onto a full disk: %v\nwant %q", err, want)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		ro := tmpfsHome(t, "2m", true)
		dir, err := installWhy(t, ro, nil)
		want := "install the agent to " + dir + ": " + dir + " is on a read-only file system (mounted at " + ro + ")"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("install onto a read-only file system: %v\nwant %q", err, want)
		}
	})
	t.Run("loose cache folder", func(t *testing.T) {
		var own string
		dir, err := installWhy(t, "", func(home string) {
			own = home
			must(t, os.MkdirAll(filepath.Join(home, ".cache"), 0o700))
			must(t, os.Chmod(filepath.Join(home, ".cache"), 0o777))
		})
		for _, want := range []string{"refusing to install the agent to " + dir + ": drwxrwxrwx", ".cache (mode, owner uid, path) is not yours or others may write it",
			"would run ", "fix: chmod go-w that folder"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("install into a cache others may write: %v\nwant %q", err, want)
			}
		}
		if _, err := os.Stat(agentDir(own)); err != nil {
			t.Fatalf("the agent's folder: %v", err)
		}
		if ents, _ := os.ReadDir(agentDir(own)); len(ents) != 0 {
			t.Errorf("written into a folder others may write: %v", ents)
		}
	})
}
