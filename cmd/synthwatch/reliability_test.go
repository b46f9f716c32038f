package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
	"golang.org/x/crypto/ssh/knownhosts"
)

// reliability gates the long suite: SW_RELIABILITY=1 (go test -run Reliability).
func reliability(t *testing.T) {
	testgate.Reliability(t)
	t.Parallel() // the cases share nothing; together they take as long as the longest
}

// nightRoot is a root with one big category served by srv.
func nightRoot(t *testing.T, srvURL string, prompts int) string {
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B1_night")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	f, _ := os.Create(filepath.Join(dir, "prompts.jsonl"))
	w := bufio.NewWriter(f)
	for i := 0; i < prompts; i++ {
		fmt.Fprintf(w, `{"id":%d,"messages":[{"role":"user","content":"q"}]}`+"\n", i)
	}
	w.Flush()
	f.Close()
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte(fmt.Sprintf("server = %q\n[classes.SHORT]\nconcurrency = 32\n[[categories]]\nname = \"B1_night\"\n", srvURL)), 0o644)
	return root
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// 1. Link faults between the dashboard and sshd: 5 black-holes of 60 s
// (SW_HOLE), 5 resets, 1 sshd restart. Each time the link goes down and
// comes back; the worker log tail resumes with no line lost or repeated;
// the worker on the host runs throughout.
func TestReliabilityLinkFaults(t *testing.T) {
	reliability(t)
	hole := time.Minute
	if v, err := time.ParseDuration(os.Getenv("SW_HOLE")); err == nil {
		hole = v
	}
	bin := testbin.Path(t)
	srv := sim.New(sim.Options{Speed: 5})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := nightRoot(t, srv.URL(), 2_000_000)
	act := actions.Actor{H: remote.Local{}, Root: root, WorkerBin: bin}
	pid, err := act.Launch(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-pid, syscall.SIGKILL)

	s := sshdtest.Start(t)
	px, err := faultproxy.Start(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	kh := filepath.Join(t.TempDir(), "kh")
	os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(px.Addr())}, s.HostKey)+"\n"), 0o600)
	h, err := remote.Dial(context.Background(), remote.Options{Target: s.User + "@" + px.Addr(), Identities: []string{s.KeyPath}, Home: t.TempDir(),
		Opts: []string{"IdentityAgent=none", "UserKnownHostsFile=" + kh, "StrictHostKeyChecking=yes", "ServerAliveInterval=5", "ServerAliveCountMax=3", "ConnectTimeout=5"}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.MaxBackoff = 5 * time.Second
	w := pipeline.NewWatcher(h, pipeline.Options{Host: "night", Root: root, ServerURL: srv.URL()}, nil)

	w.Poll(context.Background()) // the dashboard has seen the link up before the first fault
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() { // the dashboard's poll loop
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			t0 := time.Now()
			snap := w.Poll(context.Background())
			if d := time.Since(t0); d > 5*time.Second || snap.Connection.State != "connected" {
				t.Logf("poll took %s, link %s, %d events", d.Round(time.Millisecond), snap.Connection.State, len(snap.Events))
			}
			if !alive(pid) {
				t.Errorf("the worker died during the faults")
				return
			}
		}
	}()
	wait := func(p remote.Phase, d time.Duration) {
		t.Helper()
		deadline := time.Now().Add(d)
		for h.State().Phase != p {
			if time.Now().After(deadline) {
				t.Fatalf("state %v, want %v", h.State(), p)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	wait(remote.Connected, 10*time.Second)
	for i := 0; i < 5; i++ {
		px.SetMode(faultproxy.BlackHole)
		wait(remote.Reconnecting, 30*time.Second)
		time.Sleep(hole)
		px.SetMode(faultproxy.Forward)
		wait(remote.Connected, 30*time.Second)
	}
	// A reset link can be back within a sampling interval: the host's drop
	// count says it went down, the phase that it came back.
	dropped := func(before int, d time.Duration) {
		t.Helper()
		deadline := time.Now().Add(d)
		for h.State().Drops == before {
			if time.Now().After(deadline) {
				t.Fatalf("state %v: no drop", h.State())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for i := 0; i < 5; i++ {
		before := h.State().Drops
		px.Reset()
		dropped(before, 10*time.Second)
		wait(remote.Connected, 20*time.Second)
	}
	before := h.State().Drops
	s.Restart()
	dropped(before, 10*time.Second)
	wait(remote.Connected, 20*time.Second)
	time.Sleep(3 * time.Second)
	close(stop)
	<-polled

	// The tail saw every line of the worker log once, in order: compare what
	// the dashboard holds with the file, up to the offset it has read.
	if !alive(pid) {
		t.Fatal("the worker did not survive")
	}
	syscall.Kill(-pid, syscall.SIGTERM)
	for deadline := time.Now().Add(2 * time.Minute); alive(pid) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // its grace may be long on a loaded machine: the log must be final before we compare
	}
	if alive(pid) {
		t.Fatal("the worker did not stop within 2 min of SIGTERM")
	}
	w.Poll(context.Background())
	s2 := w.Poll(context.Background())
	data, _ := os.ReadFile(filepath.Join(root, "logs", "inference_all.log"))
	var want []string
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		want = append(want, parse.SanitizeLine([]byte(l), 4096))
	}
	got := w.WorkerLog.Lines()
	if len(want) > len(got) {
		want = want[len(want)-len(got):]
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("worker log lines lost or repeated: dashboard has %d lines, file %d:\ndashboard:\n%s\nfile:\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var events []string
	for _, e := range s2.Events {
		events = append(events, e.Kind)
	}
	if n := strings.Count(strings.Join(events, ","), "reconnect"); n < 11 {
		t.Errorf("timeline has %d reconnects, want 11: %v", n, events)
	}
	raw, _ := os.ReadFile(filepath.Join(root, "prepared", "B1_night", "raw_responses.jsonl"))
	if n := int64(strings.Count(string(raw), "\n")); s2.Categories[0].Done != n {
		t.Errorf("count %d, wc -l %d", s2.Categories[0].Done, n)
	}
}

// 3. Server faults from sim: 20% 503s, resets, hangs, a 60 s down window
// (SW_HOLE) and a crash with a traceback. Everything completes, errors are
// counted, and the crash is an event on the timeline.
func TestReliabilityServerFaults(t *testing.T) {
	reliability(t)
	down := time.Minute
	if v, err := time.ParseDuration(os.Getenv("SW_HOLE")); err == nil {
		down = v
	}
	bin := testbin.Path(t)
	logDir := t.TempDir()
	lf, _ := os.Create(filepath.Join(logDir, "sglang_inference.log"))
	defer lf.Close()
	srv := sim.New(sim.Options{Speed: 40, Log: lf}) // the crash is read from the server's log
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.SetFaults(sim.Faults{ErrorRate: 0.2, ResetRate: 0.05, HangRate: 0.01})
	const n = 3000
	root := nightRoot(t, srv.URL(), n)
	if err := os.Rename(filepath.Join(logDir, "sglang_inference.log"), filepath.Join(root, "logs", "sglang_inference.log")); err != nil {
		t.Fatal(err)
	}
	act := actions.Actor{H: remote.Local{}, Root: root, WorkerBin: bin, Extra: []string{"--request-timeout", "2s"}}
	w := pipeline.NewWatcher(remote.Local{}, pipeline.Options{Host: "night", Root: root, ServerURL: srv.URL()}, nil)
	pid, err := act.Launch(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-pid, syscall.SIGKILL)
	time.Sleep(5 * time.Second)
	srv.Down(down)
	time.Sleep(down + 10*time.Second)
	srv.Crash(5 * time.Second)
	var s snapshot.Snapshot
	for deadline := time.Now().Add(10 * time.Minute); ; {
		s = w.Poll(context.Background())
		if s.Worker.Phase == "done" && !alive(pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done: %+v", s.Categories)
		}
		time.Sleep(time.Second)
	}
	errs, _ := os.ReadFile(filepath.Join(root, "prepared", "B1_night", "errors.jsonl"))
	nerr := int64(strings.Count(string(errs), "\n"))
	c := s.Categories[0]
	if c.Done+nerr < n || c.Errors != nerr {
		t.Fatalf("done %d + errors %d (shown %d) != %d", c.Done, nerr, c.Errors, n)
	}
	crash := false
	for _, e := range s.Events {
		crash = crash || e.Kind == "server_crash"
	}
	if !crash {
		t.Errorf("no server_crash event: %v", s.Events)
	}
	// what gave up is retried by the next run: every id exactly once in the end
	srv.SetFaults(sim.Faults{})
	if _, err := act.Launch(context.Background(), nil); err != nil && err != actions.ErrNothingLeft {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		s = w.Poll(context.Background())
		if s.Categories[0].Done == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second run: %+v", s.Categories[0])
		}
		time.Sleep(time.Second)
	}
	raw, _ := os.ReadFile(filepath.Join(root, "prepared", "B1_night", "raw_responses.jsonl"))
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		h, err := parse.ParseRecordHead([]byte(l))
		if err != nil || seen[string(h.ID)] {
			t.Fatalf("bad or repeated record %q", l)
		}
		seen[string(h.ID)] = true
	}
}
