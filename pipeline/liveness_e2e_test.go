package pipeline

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// startIn runs sh -c script in dir as its own session (as nohup under
// setsid would), killed with its group at the end of the test.
func startIn(t *testing.T, dir, script string, args ...string) int {
	t.Helper()
	c := exec.Command("sh", append([]string{"-c", script}, args...)...)
	c.Dir = dir
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	must(t, c.Start())
	exited := make(chan struct{})
	go func() { c.Wait(); close(exited) }()
	t.Cleanup(func() { syscall.Kill(-c.Process.Pid, syscall.SIGKILL); <-exited })
	return c.Process.Pid
}

func pidAlive(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s, err := remote.ParseProcStat(st)
	return err == nil && s.State != 'Z'
}

// oneShot is what a fresh `synthwatch status` sees: a new watcher, one poll.
func (e *e2e) oneShot() snapshot.Snapshot {
	return NewWatcher(e.h, Options{Host: "e2e", Root: e.root, ServerURL: e.sim.URL()}, nil).Poll(context.Background())
}

// TestEndToEndRestartChecksTheBinaryFirst: a restart whose binary is not
// on the host fails as a launch would, and the worker it would have
// stopped is still running.
func TestEndToEndRestartChecksTheBinaryFirst(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 50000}, 5)
	ctx := context.Background()
	pid, err := e.act.Launch(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.until("running", 30*time.Second, func(s snapshot.Snapshot) bool { return snapshot.Alive(s.Worker.State) && s.Worker.PID == pid })
	bad := e.act
	bad.WorkerBin = "/nonexistent/synthwatch"
	_, err = bad.Restart(ctx, "B1", []string{"B1"}, 2*time.Second, 0)
	if err == nil || !strings.Contains(err.Error(), "exit 127") || !strings.Contains(err.Error(), "deploy it first") ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d left running", pid)) {
		t.Fatalf("restart with no binary: %v", err)
	}
	if !pidAlive(pid) {
		t.Fatal("the worker was stopped by a restart that could not launch")
	}
	if s := e.w.Poll(ctx); !snapshot.Alive(s.Worker.State) || s.Worker.PID != pid {
		t.Fatalf("after the failed restart: %+v", s.Worker)
	}
	if _, err := os.Stat(filepath.Join(e.root, parse.KillNotePath)); err == nil {
		t.Fatal("a kill note without a kill")
	}
}

// TestEndToEndKillOfTruncatingWorker: the real worker with its log opened
// with ">" (not ">>") writes over the kill marker as it stops; the kill
// note in run/ still says it was us, to the watcher and to a one-shot
// status.
func TestEndToEndKillOfTruncatingWorker(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 50000}, 5)
	mkdir(t, filepath.Join(e.root, "logs"))
	pid := startIn(t, e.root, `exec nohup "$0" worker --root . --server "$1" > logs/inference_all.log 2>&1`, testbin.Path(t), e.sim.URL())
	e.until("running", 30*time.Second, func(s snapshot.Snapshot) bool {
		return snapshot.Alive(s.Worker.State) && s.Worker.PID == pid && catByName(t, s, "B1").Done > 5
	})
	ctx := context.Background()
	if how, err := e.act.Kill(ctx, 0, 10*time.Second); err != nil {
		t.Fatalf("kill: %q %v", how, err)
	}
	log, _ := os.ReadFile(filepath.Join(e.root, parse.WorkerLogPath))
	if strings.Contains(string(log), parse.KillMarker) {
		t.Log("the worker did not write over the marker this time; the note is checked all the same")
	}
	b, err := os.ReadFile(filepath.Join(e.root, parse.KillNotePath))
	must(t, err)
	n, ok := parse.ParseKillNote(b)
	if !ok || n.PID != pid || n.Start == 0 || time.Since(n.At) > time.Minute {
		t.Fatalf("kill note %q: %+v", b, n)
	}
	s := e.until("stopped", 15*time.Second, func(s snapshot.Snapshot) bool { return !snapshot.Alive(s.Worker.State) })
	if s.Worker.State != snapshot.WorkerStopped || !s.Worker.ByYou || s.Worker.PID != pid {
		t.Fatalf("watcher after kill: %+v", s.Worker)
	}
	if s := e.oneShot(); s.Worker.State != snapshot.WorkerStopped || !s.Worker.ByYou || s.Worker.PID != pid {
		t.Fatalf("one-shot status after kill: %+v", s.Worker)
	}
}

// TestEndToEndWriterEndsWithItsIdentity: a Python-style writer found in
// /proc next to an old worker.json (a worker stopped by us long ago) is
// judged by itself when it ends: kill -9 is died, with its pid and
// command, not the old worker's "stopped by you".
func TestEndToEndWriterEndsWithItsIdentity(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 10}, 100)
	old := startIn(t, e.root, "exit 0")
	for pidAlive(old) {
		time.Sleep(10 * time.Millisecond)
	}
	at := time.Now().Add(-time.Hour)
	writeWorkerJSON(t, e.root, parse.WorkerState{PID: old, State: parse.WorkerStopped, StartedAt: at, UpdatedAt: at, Category: "B1"})
	write(t, filepath.Join(e.root, parse.WorkerLogPath), fmt.Sprintf("%s%d (SIGTERM, then SIGKILL after 30s)\n", parse.KillMarker, old))
	s := e.w.Poll(context.Background())
	if s.Worker.State != snapshot.WorkerStopped || !s.Worker.ByYou || s.Worker.PID != old {
		t.Fatalf("old worker: %+v", s.Worker)
	}
	p := startIn(t, e.root, "while :; do echo x; sleep 0.2; done >> logs/inference_all.log")
	s = e.until("writer found", 40*time.Second, func(s snapshot.Snapshot) bool { return s.Worker.PID == p })
	if s.Worker.State != snapshot.WorkerRunning || s.Worker.Source != "proc" {
		t.Fatalf("writer: %+v", s.Worker)
	}
	must(t, syscall.Kill(-p, syscall.SIGKILL))
	s = e.until("ended", 10*time.Second, func(s snapshot.Snapshot) bool { return !snapshot.Alive(s.Worker.State) })
	if s.Worker.State != snapshot.WorkerDied || s.Worker.ByYou || s.Worker.PID != p || !strings.Contains(s.Worker.Command, "while :; do echo x") ||
		!strings.Contains(s.Worker.Reason, fmt.Sprintf("pid %d", p)) {
		t.Fatalf("after kill -9: %+v", s.Worker)
	}
	died := false
	for _, ev := range s.Events {
		died = died || ev.Kind == "worker_exited" && strings.Contains(ev.Text, fmt.Sprintf("worker pid %d died", p))
	}
	if !died {
		t.Fatalf("events: %+v", s.Events)
	}
}

// TestEndToEndKillOfTruncatingWriter: no worker.json, a writer holding
// the log with ">" that writes as it stops (over the marker): our kill is
// stopped, by you, with its pid, for the watcher and a one-shot status.
func TestEndToEndKillOfTruncatingWriter(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 10}, 100)
	mkdir(t, filepath.Join(e.root, "logs"))
	bye := strings.Repeat("b", 150) // longer than the marker it writes over
	p := startIn(t, e.root, `trap 'echo `+bye+`; exit 0' TERM; while :; do echo x; sleep 0.2; done > logs/inference_all.log`)
	s := e.until("writer found", 10*time.Second, func(s snapshot.Snapshot) bool { return s.Worker.PID == p })
	if s.Worker.State != snapshot.WorkerRunning {
		t.Fatalf("writer: %+v", s.Worker)
	}
	if how, err := e.act.Kill(context.Background(), 0, 30*time.Second); err != nil {
		t.Fatalf("kill: %q %v", how, err)
	}
	if log, _ := os.ReadFile(filepath.Join(e.root, parse.WorkerLogPath)); strings.Contains(string(log), parse.KillMarker) {
		t.Fatalf("the writer should have written over the marker:\n%s", log)
	}
	if s := e.oneShot(); s.Worker.State != snapshot.WorkerStopped || !s.Worker.ByYou || s.Worker.PID != p {
		t.Fatalf("one-shot status after kill: %+v", s.Worker)
	}
	s = e.until("stopped", 10*time.Second, func(s snapshot.Snapshot) bool { return !snapshot.Alive(s.Worker.State) })
	if s.Worker.State != snapshot.WorkerStopped || !s.Worker.ByYou || s.Worker.PID != p || !strings.Contains(s.Worker.Command, "while :") {
		t.Fatalf("watcher after kill: %+v", s.Worker)
	}
}

// TestEndToEndRestartOfAnotherWriter: restart stops a synthwatch worker
// unasked, but a process that only writes a category file it refuses,
// naming it, unless its pid is given; then it says what it stopped.
func TestEndToEndRestartOfAnotherWriter(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 50000}, 5)
	raw := filepath.Join(e.root, "prepared", "B1", "raw_responses.jsonl")
	p := startIn(t, e.root, "exec 3>>"+remote.Quote(raw)+"; while :; do sleep .5; done")
	time.Sleep(300 * time.Millisecond)
	ctx := context.Background()
	_, err := e.act.Restart(ctx, "B1", []string{"B1"}, 2*time.Second, 0)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", p)) || !strings.Contains(err.Error(), "exec 3>>") || !strings.Contains(err.Error(), "--pid") {
		t.Fatalf("restart next to another writer: %v", err)
	}
	if !pidAlive(p) {
		t.Fatal("restart killed a process it was not asked to")
	}
	res, err := e.act.Restart(ctx, "B1", []string{"B1"}, 2*time.Second, p)
	if err != nil && err != actions.ErrNothingLeft {
		t.Fatalf("restart --pid: %v", err)
	}
	if res.Stopped != p || !strings.Contains(res.StoppedCmd, "exec 3>>") || res.PID <= 0 || pidAlive(p) {
		t.Fatalf("restart --pid: %+v (old alive %v)", res, pidAlive(p))
	}
}
