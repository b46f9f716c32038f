package actions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
)

// Restart puts the chosen category first and passes every category as its
// own --only, so a name with a comma reaches the worker whole.
func TestRestartPassesEachCategory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "prepared"))
	argsFile := filepath.Join(root, "args")
	bin := filepath.Join(root, "fake-synthwatch")
	write(t, bin, "#!/bin/sh\nprintf '%s\\n' \"$@\" > "+argsFile+"\nsleep 5\n")
	must(t, os.Chmod(bin, 0o755))
	a := Actor{H: localHost(), Root: root, WorkerBin: bin, Extra: []string{"--concurrency", "4"}}
	res, err := a.Restart(t.Context(), "a,b", []string{"A", "a,b", "C"}, time.Second, 0)
	if res.PID > 0 {
		defer stopLaunched(res.PID)
	}
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	got, _ := os.ReadFile(argsFile)
	want := "worker\n--root\n" + root + "\n--only\na,b\n--only\nA\n--only\nC\n--concurrency\n4\n"
	if string(got) != want {
		t.Fatalf("worker got args\n%q\nwant\n%q", got, want)
	}
	if _, err := a.Restart(t.Context(), "a", []string{"A", "a,b"}, time.Second, 0); err == nil {
		t.Error("restart of a category that is not there")
	}
}

// A launch on a root without prepared/ (a typo) starts nothing and
// creates nothing there: the same refusal for the CLI and the dashboard's L,
// which both go through Actor.Launch.
func TestLaunchRefusesARootWithoutPrepared(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "synht")
	bin := filepath.Join(t.TempDir(), "fake-synthwatch")
	write(t, bin, "#!/bin/sh\nsleep 5\n")
	must(t, os.Chmod(bin, 0o755))
	for _, r := range []string{root, filepath.Dir(root)} { // missing, and a directory with no prepared/
		pid, err := Actor{H: localHost(), Root: r, WorkerBin: bin}.Launch(t.Context(), nil)
		if pid > 0 {
			stopLaunched(pid)
		}
		if err == nil || pid != 0 || !strings.Contains(err.Error(), "no pipeline root at "+r+" (no prepared/ directory)") {
			t.Fatalf("launch on %s: pid %d, %v", r, pid, err)
		}
		if _, err := os.Stat(filepath.Join(r, "logs")); !os.IsNotExist(err) {
			t.Fatalf("the refused launch made %s/logs (%v)", r, err)
		}
	}
}

// A worker that exits at once says why in the launch's error (its log's
// last line), as the user would find it there: an empty prepared/ is no
// bare "exited at once; see LOG".
func TestLaunchSaysWhyTheWorkerExitedAtOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "prepared"))
	pid, err := Actor{H: localHost(), Root: root, WorkerBin: testbin.Path(t)}.Launch(t.Context(), nil)
	if err == nil {
		stopLaunched(pid)
		t.Fatal("a worker with no categories stayed up")
	}
	if !strings.Contains(err.Error(), "exited at once: ") || !strings.Contains(err.Error(), "no categories under "+root) {
		t.Fatalf("launch: %v", err)
	}
}
