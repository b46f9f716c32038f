package actions

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

func mkdir(t testing.TB, p string) { t.Helper(); must(t, os.MkdirAll(p, 0o755)) }
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
func write(t *testing.T, p, s string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	must(t, os.WriteFile(p, []byte(s), 0o644))
}

func localHost() remote.Host { return remote.Local{} }

// stopLaunched ends a test's detached fake worker by its pid: its process
// group (the launch starts it with setsid), else the pid alone.
func stopLaunched(pid int) {
	if syscall.Kill(-pid, syscall.SIGKILL) != nil {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// fillRunningRoot is a root a worker runs on: categories with records, its
// log, worker.json naming a live process whose cmdline reads
// "... worker --root ROOT", as the pid check expects of a real worker.
func fillRunningRoot(t *testing.T, root string) {
	for _, n := range []string{"B1_glaive", "B2_opencodeinstruct"} {
		write(t, filepath.Join(root, "prepared", n, parse.PromptsFile), `{"id":"`+n+`-0","messages":[]}`+"\n")
		write(t, filepath.Join(root, "prepared", n, parse.RawFile), `{"id":"`+n+`-0","completion_tokens":200}`+"\n")
	}
	write(t, filepath.Join(root, "logs", "inference_all.log"), "Processing: B2_opencodeinstruct (SHORT)\n"+strings.Repeat("1/6000 (0 err) 9.8 req/s avg_comp=248tok ETA=6m\n", 3))
	cmd := exec.Command("sh", "-c", "while :; do sleep 1; done", "synthwatch", "worker", "--root", root)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	data, err := json.Marshal(parse.WorkerState{Schema: 1, PID: cmd.Process.Pid, State: parse.WorkerRunning, Category: "B2_opencodeinstruct", UpdatedAt: time.Now()})
	must(t, err)
	write(t, filepath.Join(root, "run", "worker.json"), string(data))
}
