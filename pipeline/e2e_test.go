package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

func TestMain(m *testing.M) {
	// the test binary is what Deploy installs as the host agent: the host runs it so
	if len(os.Args) >= 2 && os.Args[1] == "agent" {
		os.Exit(remote.AgentMain(os.Args[2:], os.Stdin, os.Stdout, nil))
	}
	testbin.Main(m)
}

type e2e struct {
	t    *testing.T
	root string
	sshd *sshdtest.Server
	sim  *sim.Server
	h    *remote.SSH
	act  actions.Actor
	w    *Watcher
}

func newE2E(t *testing.T, cats map[string]int, speed float64) *e2e {
	e := &e2e{t: t, root: t.TempDir()}
	e.sim = sim.New(sim.Options{Speed: speed})
	must(t, e.sim.Start("127.0.0.1:0"))
	t.Cleanup(e.sim.Close)
	var manifest strings.Builder
	fmt.Fprintf(&manifest, "server = %q\n[classes.SHORT]\nconcurrency = 8\n", e.sim.URL())
	for _, name := range []string{"B1", "B2"} {
		if n, ok := cats[name]; ok {
			write(t, filepath.Join(e.root, "prepared", name, "prompts.jsonl"), prompts(name, n))
			fmt.Fprintf(&manifest, "[[categories]]\nname = %q\nclass = \"SHORT\"\n", name)
		}
	}
	write(t, filepath.Join(e.root, "pipeline.toml"), manifest.String())
	e.sshd = sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	h, err := remote.Dial(context.Background(), remote.Options{
		Target: e.sshd.User + "@" + e.sshd.Addr(), Identities: []string{e.sshd.KeyPath}, Home: t.TempDir(),
		Opts: []string{"UserKnownHostsFile=" + e.sshd.KnownHosts, "StrictHostKeyChecking=yes"},
	})
	must(t, err)
	t.Cleanup(func() { h.Close() })
	e.h = h
	e.act = actions.Actor{H: h, Root: e.root, WorkerBin: testbin.Path(t)}
	e.w = NewWatcher(h, Options{Host: "e2e", Root: e.root, ServerURL: e.sim.URL()}, nil)
	t.Cleanup(func() { exec.Command("pkill", "-KILL", "-f", "worker --root "+e.root).Run() })
	return e
}

// until polls the watcher until cond holds.
func (e *e2e) until(what string, d time.Duration, cond func(snapshot.Snapshot) bool) snapshot.Snapshot {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := e.w.Poll(context.Background())
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(e.root, "logs", "inference_all.log"))
			e.t.Fatalf("%s: not within %s; last snapshot worker=%+v cats=%+v\nworker log:\n%s", what, d, s.Worker, s.Categories, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkIDs asserts whole lines, ids once each, and a count equal to wc -l.
func (e *e2e) checkIDs(cat string, s snapshot.Snapshot) int {
	e.t.Helper()
	p := filepath.Join(e.root, "prepared", cat, "raw_responses.jsonl")
	data, err := os.ReadFile(p)
	must(e.t, err)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		e.t.Fatalf("%s: torn last line", cat)
	}
	seen := map[string]bool{}
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var r struct{ ID string }
		if err := json.Unmarshal(l, &r); err != nil {
			e.t.Fatalf("%s: bad line %q", cat, l)
		}
		if seen[r.ID] {
			e.t.Fatalf("%s: id %s twice", cat, r.ID)
		}
		seen[r.ID] = true
	}
	out, err := exec.Command("wc", "-l", p).Output()
	must(e.t, err)
	var wc int64
	fmt.Sscan(string(out), &wc)
	if c := catByName(e.t, s, cat); c.Done != wc {
		e.t.Fatalf("%s: snapshot says %d, wc -l %d", cat, c.Done, wc)
	}
	return len(seen)
}

func TestEndToEndLaunchKillResume(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 300, "B2": 200}, 20)
	ctx := context.Background()
	pid, err := e.act.Launch(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.until("counts rise", 30*time.Second, func(s snapshot.Snapshot) bool {
		return s.Worker.State == "running" && s.Worker.PID == pid && catByName(t, s, "B1").Done >= 16
	})
	if _, err := e.act.Launch(ctx, nil); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second launch: %v", err)
	}
	how, err := e.act.Kill(ctx, pid, 2*time.Minute) // it returns when the worker has gone; the grace only bounds a hang
	if err != nil || how != "gone" {
		t.Fatalf("kill: %q %v", how, err)
	}
	s := e.until("worker stopped", 30*time.Second, func(s snapshot.Snapshot) bool { return s.Worker.State == "stopped" })
	before := e.checkIDs("B1", s)
	if before == 0 || before >= 300 {
		t.Fatalf("after kill B1 has %d", before)
	}
	if catByName(t, s, "B1").State != snapshot.StateStopped || s.ETASeconds != nil {
		t.Fatalf("after kill: %+v eta %v", catByName(t, s, "B1"), s.ETASeconds)
	}
	if _, err := e.act.Launch(ctx, nil); err != nil { // resume
		t.Fatal(err)
	}
	s = e.until("all done", 90*time.Second, func(s snapshot.Snapshot) bool {
		// worker.json may say done a poll before the count has the last line
		return s.Worker.Phase == "done" && catByName(t, s, "B1").State == snapshot.StateDone && catByName(t, s, "B2").State == snapshot.StateDone &&
			catByName(t, s, "B1").Lines == 300 && catByName(t, s, "B2").Lines == 200
	})
	if e.checkIDs("B1", s) != 300 || e.checkIDs("B2", s) != 200 {
		t.Fatal("final counts")
	}
	log, _ := os.ReadFile(filepath.Join(e.root, "logs", "inference_all.log"))
	// the resume counted exactly what the kill left: the file was still
	want := parse.FormatResume("B1", 300, before, 300-before)
	if !strings.Contains(string(log), want) {
		t.Errorf("no resume line %q:\n%s", want, log)
	}
}

func TestEndToEndStallSeenByStatus(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B2": 5000}, 20)
	if _, err := e.act.Launch(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	e.until("B2 grows", 30*time.Second, func(s snapshot.Snapshot) bool { return catByName(t, s, "B2").Done >= 30 })
	e.sim.SetFaults(sim.Faults{StallMatch: "of B2"}) // the server stops answering this category's prompts
	raw := filepath.Join(e.root, "prepared", "B2", "raw_responses.jsonl")
	last, quietSince := int64(-1), time.Now()
	for deadline := time.Now().Add(2 * time.Minute); time.Since(quietSince) < 3*time.Second; { // quiet: the in-flight answers have landed
		if time.Now().After(deadline) {
			t.Fatal("B2 never went quiet under the stall")
		}
		st, err := os.Stat(raw)
		must(t, err)
		if st.Size() != last {
			last, quietSince = st.Size(), time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err := exec.Command(testbin.Path(t), "status", "--json", "--root", e.root, "--stall-after", "2s", "--server-url", e.sim.URL(),
		"-i", e.sshd.KeyPath, "-o", "UserKnownHostsFile="+e.sshd.KnownHosts, "-o", "StrictHostKeyChecking=yes",
		e.sshd.User+"@"+e.sshd.Addr()).Output()
	if err != nil {
		t.Fatalf("status: %v %s", err, out)
	}
	var s snapshot.Snapshot
	must(t, json.Unmarshal(out, &s))
	if c := catByName(t, s, "B2"); c.State != snapshot.StateStalled || c.ETASeconds != nil || s.Worker.State != snapshot.WorkerStalled {
		t.Fatalf("status: worker %+v B2 %+v", s.Worker, c)
	}
	if s.Server.Source != "metrics" || s.Server.RunningReqs == 0 {
		t.Errorf("server via the SSH forward: %+v", s.Server) // the hung requests still hold slots
	}
}

func TestDeployOverSSH(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 1}, 100)
	dest := filepath.Join(t.TempDir(), "bin", "synthwatch")
	// the test binary is the executable here: deploy copies whatever runs
	dep, err := e.act.Deploy(context.Background(), dest)
	if err != nil {
		t.Fatal(err)
	}
	got := dep.Worker
	self, _ := os.Executable()
	a, _ := os.ReadFile(self)
	b, _ := os.ReadFile(got)
	st, _ := os.Stat(got)
	if got != dest || !bytes.Equal(a, b) || st.Mode().Perm() != 0o755 {
		t.Fatalf("deployed %s: %d bytes vs %d, mode %v", got, len(b), len(a), st.Mode())
	}
	// install now: the agent at its version's path, the same build
	if !strings.Contains(dep.Agent.Path, "/.cache/synthwatch/agent/"+strings.TrimPrefix(remote.AgentProto, "synthwatch-agent/")+"-") || dep.Agent.Size != int64(len(a)) {
		t.Fatalf("the agent installed: %+v", dep.Agent)
	}
}

// TestEndToEndPythonStyleWorker: a plain process holding the worker log as
// its stdout (nohup python run_inference.py > logs/inference_all.log), with
// no worker.json, is found over a real sshd, named, refused a second
// writer, and killed through the kill action, which reads "stopped by you".
func TestEndToEndPythonStyleWorker(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 10}, 100)
	mkdir(t, filepath.Join(e.root, "logs"))
	py := exec.Command("sh", "-c", "while :; do echo line; sleep 0.1; done > logs/inference_all.log")
	py.Dir = e.root
	py.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	must(t, py.Start())
	exited := make(chan struct{})
	go func() { py.Wait(); close(exited) }()
	t.Cleanup(func() { syscall.Kill(-py.Process.Pid, syscall.SIGKILL); <-exited })
	pid := py.Process.Pid
	s := e.until("found", 10*time.Second, func(s snapshot.Snapshot) bool { return s.Worker.PID == pid })
	if s.Worker.State != snapshot.WorkerRunning || s.Worker.Source != "proc" || !strings.Contains(s.Worker.Command, "while :; do echo line") {
		t.Fatalf("python-style worker: %+v", s.Worker)
	}
	ctx := context.Background()
	if _, err := e.act.Launch(ctx, nil); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) || !strings.Contains(err.Error(), "while :") {
		t.Fatalf("launch next to a writer: %v", err)
	}
	how, err := e.act.Kill(ctx, 0, 30*time.Second)
	if err != nil || how != "gone" {
		t.Fatalf("kill: %q %v", how, err)
	}
	s = e.until("stopped", 10*time.Second, func(s snapshot.Snapshot) bool { return !snapshot.Alive(s.Worker.State) })
	if s.Worker.State != snapshot.WorkerStopped || !s.Worker.ByYou || s.Worker.PID != pid {
		t.Fatalf("after kill: %+v", s.Worker)
	}
	var started, ended bool
	for _, ev := range s.Events {
		started = started || ev.Kind == "worker_started" && strings.Contains(ev.Text, strconv.Itoa(pid))
		ended = ended || ev.Kind == "worker_exited" && strings.Contains(ev.Text, "stopped by you")
	}
	if started || !ended { // found on the first poll: a baseline, not a start
		t.Fatalf("events: %+v", s.Events)
	}
}

// TestEndToEndRelativeRootWorker: cd ROOT && synthwatch worker --root .
// (and --root=ROOT/) is our worker: running, and killable.
func TestEndToEndRelativeRootWorker(t *testing.T) {
	testgate.E2E(t)
	for _, spell := range []string{".", "ROOT/./", "--root=ROOT/"} {
		t.Run(spell, func(t *testing.T) {
			e := newE2E(t, map[string]int{"B1": 3000}, 5)
			arg := []string{"worker", "--root", strings.ReplaceAll(spell, "ROOT", e.root), "--server", e.sim.URL()}
			if strings.HasPrefix(spell, "--root=") {
				arg = []string{"worker", strings.ReplaceAll(spell, "ROOT", e.root), "--server", e.sim.URL()}
			}
			mkdir(t, filepath.Join(e.root, "logs"))
			logf, err := os.OpenFile(filepath.Join(e.root, "logs", "inference_all.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			must(t, err)
			wk := exec.Command(testbin.Path(t), arg...)
			wk.Dir, wk.Stdout, wk.Stderr = e.root, logf, logf
			wk.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			must(t, wk.Start())
			logf.Close() // the worker holds it now; a test holding it would be a writer too
			exited := make(chan struct{})
			go func() { wk.Wait(); close(exited) }()
			t.Cleanup(func() { wk.Process.Kill(); <-exited })
			s := e.until("recognised", 20*time.Second, func(s snapshot.Snapshot) bool {
				return s.Worker.PID == wk.Process.Pid && s.Worker.Source == "worker.json" && snapshot.Alive(s.Worker.State)
			})
			if s.Worker.Command == "" {
				t.Fatalf("no command: %+v", s.Worker)
			}
			if how, err := e.act.Kill(context.Background(), 0, 10*time.Second); err != nil {
				t.Fatalf("kill: %q %v", how, err)
			}
			s = e.until("stopped by you", 15*time.Second, func(s snapshot.Snapshot) bool { return s.Worker.State == snapshot.WorkerStopped })
			if !s.Worker.ByYou {
				t.Fatalf("after kill: %+v", s.Worker)
			}
		})
	}
}

// TestEndToEndSimKill9IsDown: kill -9 of a real sim process while the real
// worker runs: within two polls of the evidence (the refusal and the worker
// waiting for /health) the server is down, with the reason, and a
// server_down event; a new sim on the same port brings server_up.
func TestEndToEndSimKill9IsDown(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 50000}, 5)
	addr := strings.TrimPrefix(e.sim.URL(), "http://")
	e.sim.Close() // the in-process one goes; a real process takes its port
	slog := filepath.Join(e.root, "logs", "sglang_inference.log")
	mkdir(t, filepath.Dir(slog))
	startSim := func() *exec.Cmd {
		c := exec.Command(testbin.Path(t), "sim", "--listen", addr, "--log", slog, "--speed", "5")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		must(t, c.Start())
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	simp := startSim()
	e.until("server answers", 20*time.Second, func(s snapshot.Snapshot) bool { return s.Server.Metrics == "ok" })
	if _, err := e.act.Launch(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	e.until("busy", 30*time.Second, func(s snapshot.Snapshot) bool {
		return snapshot.Alive(s.Worker.State) && catByName(t, s, "B1").Done > 10 && (s.Server.State == snapshot.ServerBusy || s.Server.State == snapshot.ServerReady)
	})
	must(t, simp.Process.Signal(syscall.SIGKILL))
	// the evidence: nothing listens, and the worker says it waits
	wjson := filepath.Join(e.root, "run", "worker.json")
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(wjson)
		if bytes.Contains(data, []byte(`"waiting_server"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never waited: %s", data)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var s snapshot.Snapshot
	for i := 1; ; i++ {
		s = e.w.Poll(context.Background())
		if s.Server.State == snapshot.ServerDown {
			break
		}
		if i == 2 {
			t.Fatalf("not down within two polls: %+v", s.Server)
		}
		time.Sleep(time.Second)
	}
	if !strings.Contains(s.Server.Reason, "/metrics refused") || !strings.Contains(s.Server.Reason, "worker waiting for /health") || !s.Server.WorkerWaiting {
		t.Fatalf("reason: %+v", s.Server)
	}
	if s.Server.RunningReqs != 0 || s.Server.GenThroughput != 0 || !math.IsNaN(s.Server.Throughput[len(s.Server.Throughput)-1]) {
		t.Fatalf("a dead server still shows figures: %+v", s.Server)
	}
	down := false
	for _, ev := range s.Events {
		down = down || ev.Kind == "server_down" && strings.HasPrefix(ev.Text, "server down: /metrics refused")
	}
	if !down {
		t.Fatalf("no server_down event: %+v", s.Events)
	}
	if snapshot.Alive(s.Worker.State) == false {
		t.Fatalf("the worker waits, it is alive: %+v", s.Worker)
	}
	startSim()
	s = e.until("server up", 30*time.Second, func(s snapshot.Snapshot) bool {
		return s.Server.State == snapshot.ServerBusy || s.Server.State == snapshot.ServerReady
	})
	up := false
	for _, ev := range s.Events {
		up = up || ev.Kind == "server_up"
	}
	if !up {
		t.Fatalf("no server_up event: %+v", s.Events)
	}
}

// TestEndToEndLaunchRefusesAnotherWriter: a process that appends to a
// category's raw_responses.jsonl blocks launch, named in the error.
func TestEndToEndLaunchRefusesAnotherWriter(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 10}, 100)
	raw := filepath.Join(e.root, "prepared", "B1", "raw_responses.jsonl")
	wr := exec.Command("sh", "-c", "exec 5>>"+remote.Quote(raw)+"; sleep 60")
	must(t, wr.Start())
	t.Cleanup(func() { wr.Process.Kill(); wr.Wait() })
	time.Sleep(200 * time.Millisecond)
	_, err := e.act.Launch(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", wr.Process.Pid)) || !strings.Contains(err.Error(), "raw_responses.jsonl") {
		t.Fatalf("launch: %v", err)
	}
	if _, err := e.act.Restart(context.Background(), "B1", []string{"B1"}, time.Second, 0); err == nil || !strings.Contains(err.Error(), "raw_responses.jsonl") {
		t.Fatalf("restart: %v", err)
	}
}
