package actions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"

	"github.com/synthwatch/synthwatch/parse"
)

// The worker log lives in a root others may write: a launch (and so a
// restart or a resume) never appends through a link planted there, nor to
// a file another account owns or that has a second name, and says why in
// one line. A log missing is made fresh and the worker's output reaches it.
func TestLaunchRefusesAPlantedWorkerLog(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, want string
		plant      func(t *testing.T, log, victim string)
	}{
		{"symlink", "it is a symbolic link", func(t *testing.T, log, victim string) { must(t, os.Symlink(victim, log)) }},
		{"dangling symlink", "it is a symbolic link", func(t *testing.T, log, victim string) {
			must(t, os.Symlink(victim+".new", log))
		}},
		{"hard link", "a hard link", func(t *testing.T, log, victim string) { must(t, os.Link(victim, log)) }},
		{"fifo", "not a regular file", func(t *testing.T, log, victim string) { must(t, syscall.Mkfifo(log, 0o644)) }},
		{"another owner", "owned by another account", func(t *testing.T, log, victim string) {
			if os.Geteuid() != 0 {
				t.Skip("chown to another account needs root")
			}
			must(t, os.WriteFile(log, nil, 0o666))
			must(t, os.Chown(log, 54321, 54321))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			must(t, os.MkdirAll(filepath.Join(root, "prepared", "A"), 0o755))
			must(t, os.MkdirAll(filepath.Join(root, "logs"), 0o777))
			victim := filepath.Join(t.TempDir(), ".bashrc")
			must(t, os.WriteFile(victim, []byte("# rc\n"), 0o644))
			log := parse.Layout{Root: root}.WorkerLog()
			tc.plant(t, log, victim)
			a := Actor{H: localHost(), Root: root, WorkerBin: "/bin/echo"}
			err := a.Preflight(ctx)
			if err == nil || !strings.Contains(err.Error(), "refusing the worker log "+log+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("preflight: %v, want %q", err, tc.want)
			}
			r, err := a.H.Exec(ctx, a.LaunchArgv([]string{"x;touch /tmp/pwned"})...)
			if err != nil || r.ExitCode == 0 || !strings.Contains(string(r.Stderr), tc.want) || strings.Count(strings.TrimSpace(string(r.Stderr)), "\n") != 0 {
				t.Errorf("launch: %v exit %d: %q, want one line %q", err, r.ExitCode, r.Stderr, tc.want)
			}
			if b, _ := os.ReadFile(victim); string(b) != "# rc\n" {
				t.Errorf("the victim's file was written: %q", b)
			}
			if _, err := os.Lstat(victim + ".new"); err == nil {
				t.Error("the dangling link's target was created")
			}
		})
	}
	t.Run("fresh", func(t *testing.T) {
		root := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(root, "prepared", "A"), 0o755))
		a := Actor{H: localHost(), Root: root, WorkerBin: "/bin/echo"}
		r, err := a.H.Exec(ctx, a.LaunchArgv([]string{"A"})...)
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("launch: %v exit %d: %s", err, r.ExitCode, r.Stderr)
		}
		log := parse.Layout{Root: root}.WorkerLog()
		want := "worker --root " + root + " --only A\n"
		testgate.Eventually(t, time.Minute, "the detached echo's line in the fresh log", func() bool {
			b, _ := os.ReadFile(log)
			return string(b) == want
		})
	})
}
