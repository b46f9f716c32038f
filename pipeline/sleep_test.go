package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// sleepClock is the machine's clocks, with a wall clock that can jump ahead
// of the monotonic one: a sleep, without sleeping.
type sleepClock struct {
	start time.Time
	skew  atomic.Int64
}

func newSleepClock() *sleepClock { return &sleepClock{start: time.Now()} }

func (c *sleepClock) Wall() time.Time {
	return time.Now().Round(0).Add(time.Duration(c.skew.Load()))
}
func (c *sleepClock) Mono() time.Duration   { return time.Since(c.start) }
func (c *sleepClock) sleep(d time.Duration) { c.skew.Add(int64(d)) }

// wakeHost dials s through a fault proxy that adds rtt, with the clock c,
// OpenSSH's keepalive defaults (15 s × 3) and a short connect timeout: a
// dial begun while the proxy black-holes never finishes.
func wakeHost(tb testing.TB, s *sshdtest.Server, c remote.Clock, rtt time.Duration) (*remote.SSH, *faultproxy.Proxy) {
	tb.Helper()
	px, err := faultproxy.Start(s.Addr())
	must(tb, err)
	tb.Cleanup(px.Close)
	px.SetDelay(rtt / 2)
	kh := filepath.Join(tb.TempDir(), "kh")
	khb, err := os.ReadFile(s.KnownHosts)
	must(tb, err)
	port := func(a string) string { return a[strings.LastIndexByte(a, ':'):] }
	must(tb, os.WriteFile(kh, []byte(strings.Replace(string(khb), port(s.Addr()), port(px.Addr()), 1)), 0o644))
	tb.Setenv("SSH_AUTH_SOCK", "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := remote.Dial(ctx, remote.Options{Target: s.User + "@" + px.Addr(), Identities: []string{s.KeyPath}, Home: tb.TempDir(),
		Opts: []string{"UserKnownHostsFile=" + kh, "StrictHostKeyChecking=yes", "ConnectTimeout=3"}, Clock: c})
	must(tb, err)
	tb.Cleanup(func() { h.Close() })
	return h, px
}

// nightRoot is a pipeline halfway through B1 with B2 to go, and a live
// worker (pid) whose process kill ends.
func nightRoot(t *testing.T) (root string, pid int, kill func()) {
	root = t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 20))
	write(t, filepath.Join(root, "prepared", "B1", "raw_responses.jsonl"), records("B1", 0, 10))
	write(t, filepath.Join(root, "prepared", "B2", "prompts.jsonl"), prompts("B2", 20))
	write(t, filepath.Join(root, "logs", "inference_all.log"),
		"============================================================\nProcessing: B1 (SHORT)\n============================================================\n"+
			"B1: 20 prompts\nRunning 20 requests (concurrency=8, max_tokens=1024)...\n")
	cmd := exec.Command("sh", "-c", "while :; do sleep 1; done", "synthwatch", "worker", "--root", root)
	must(t, cmd.Start())
	kill = func() { cmd.Process.Kill(); cmd.Wait() }
	t.Cleanup(kill)
	return root, cmd.Process.Pid, kill
}

func kindOf(evs []snapshot.Event, kind string) []snapshot.Event {
	var out []snapshot.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// A night with the lid closed, through a real sshd behind a black-holed
// proxy, with the clocks of a machine that slept 7h12m. While it slept B1
// and B2 finished and the worker exited. The first poll after the wake is
// stale at once; the link comes back by itself, without the 45 s of
// keepalives; the first fresh poll reads the night back with the host's
// own times; the timeline has one "slept" event and no disconnect storm.
func TestWakeAfterNight(t *testing.T) {
	root, pid, kill := nightRoot(t)
	clk := newSleepClock()
	sshd := sshdtest.Start(t)
	h, px := wakeHost(t, sshd, clk, 0)
	writeWorkerJSON(t, root, parse.WorkerState{PID: pid, State: parse.WorkerRunning, Category: "B1",
		StartedAt: clk.Wall().Add(-time.Hour), UpdatedAt: clk.Wall()})
	w := NewWatcher(h, Options{Host: "night", Root: root, ServerURL: closedURL(t), Now: clk.Wall}, nil)
	before := poll(w)
	if before.Connection.State != snapshot.LinkConnected || before.Worker.State != snapshot.WorkerRunning || catByName(t, before, "B1").Done != 10 {
		t.Fatalf("before the night: %+v %+v %+v", before.Connection, before.Worker, before.Categories)
	}

	// the lid closes: the link goes silent, and the night happens on the host
	px.SetMode(faultproxy.BlackHole)
	lidClosed := clk.Wall()
	b1Done, b2Done, exited := lidClosed.Add(2*time.Hour), lidClosed.Add(5*time.Hour), lidClosed.Add(5*time.Hour+time.Minute)
	appendTo(t, filepath.Join(root, "prepared", "B1", "raw_responses.jsonl"), records("B1", 10, 10))
	must(t, os.Chtimes(filepath.Join(root, "prepared", "B1", "raw_responses.jsonl"), b1Done, b1Done))
	write(t, filepath.Join(root, "prepared", "B2", "raw_responses.jsonl"), records("B2", 0, 20))
	must(t, os.Chtimes(filepath.Join(root, "prepared", "B2", "raw_responses.jsonl"), b2Done, b2Done))
	appendTo(t, filepath.Join(root, "logs", "inference_all.log"), "20/20 (0 err) 1.0 req/s avg_comp=200tok ETA=0s\n"+
		"============================================================\nProcessing: B2 (SHORT)\n============================================================\n"+
		"B2: 20 prompts\nRunning 20 requests (concurrency=8, max_tokens=1024)...\n20/20 (0 err) 1.0 req/s avg_comp=200tok ETA=0s\nAll categories finished.\n")
	kill()
	writeWorkerJSON(t, root, parse.WorkerState{PID: pid, State: parse.WorkerDone, StartedAt: lidClosed.Add(-time.Hour), UpdatedAt: exited,
		Categories: []parse.CategoryState{{Name: "B1", Done: 20, Target: 20, State: parse.CatDone}, {Name: "B2", Done: 20, Target: 20, State: parse.CatDone}}})
	clk.sleep(7*time.Hour + 12*time.Minute)

	// the lid opens
	woke := poll(w)
	if !woke.Connection.Stale() || woke.Worker.State != snapshot.WorkerUnknown || catByName(t, woke, "B1").State != snapshot.StateUnknown {
		t.Errorf("the first poll after the wake shows pre-sleep figures as fresh: %+v %+v %+v", woke.Connection, woke.Worker, woke.Categories)
	}
	if !strings.Contains(strings.Join(woke.Warnings, "|"), "woke") {
		t.Errorf("warnings after the wake %q", woke.Warnings)
	}
	px.SetMode(faultproxy.Forward)
	phases := []snapshot.LinkPhase{before.Connection.State, woke.Connection.State}
	var fresh snapshot.Snapshot
	deadline := time.Now().Add(90 * time.Second) // bounds a hang; measures nothing (BenchmarkWake does)
	for {
		s := poll(w)
		if p := s.Connection.State; p != phases[len(phases)-1] {
			phases = append(phases, p)
		}
		if !s.Connection.Stale() {
			fresh = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fresh figures 90 s after the wake: %+v, phases %v", s.Connection, phases)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if want := []snapshot.LinkPhase{snapshot.LinkConnected, snapshot.LinkReconnecting, snapshot.LinkConnected}; strings.Join(phaseStrings(phases), ",") != strings.Join(phaseStrings(want), ",") {
		t.Errorf("phases %v, want %v", phases, want)
	}
	if fresh.Worker.State != snapshot.WorkerExited || catByName(t, fresh, "B1").State != snapshot.StateDone || catByName(t, fresh, "B2").Done != 20 {
		t.Errorf("the first fresh poll: worker %+v, categories %+v", fresh.Worker, fresh.Categories)
	}

	evs := w.Timeline().Recent(100)
	slept := kindOf(evs, "slept")
	if len(slept) != 1 || slept[0].Text != "laptop slept 7h12m" {
		t.Errorf("slept events %+v, want one \"laptop slept 7h12m\"", slept)
	}
	for _, k := range []string{"disconnect", "reconnect", "connect_error"} {
		if got := kindOf(evs, k); len(got) != 0 {
			t.Errorf("%s events %+v: the wake's link changes belong to the slept event", k, got)
		}
	}
	if st := h.State(); st.Drops != 0 || st.Sleeps != 1 {
		t.Errorf("link state %+v: a wake is one sleep and no drop", st)
	}
	// the night, read back from the host with its own times
	at := map[string]time.Time{}
	for _, e := range evs {
		if e.Kind == "category_done" || e.Kind == "worker_exited" || e.Kind == "pipeline_done" {
			at[e.Kind+e.Category] = e.Time
		}
	}
	for k, want := range map[string]time.Time{"category_doneB1": b1Done, "category_doneB2": b2Done, "worker_exited": exited, "pipeline_done": b2Done} {
		if got, ok := at[k]; !ok || !got.Equal(want.UTC().Truncate(time.Second)) && !got.Equal(want.UTC()) {
			t.Errorf("%s at %v (found %v), want the host's %v; events %+v", k, got, ok, want.UTC(), evs)
		}
	}
}

func phaseStrings(ps []snapshot.LinkPhase) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// BenchmarkWake: seconds and round trips from the moment the network is
// usable after a simulated sleep of 7 h to the first fresh snapshot, at
// 50 ms RTT through the delaying proxy (a real sshd behind it). The first
// poll after the wake comes at once (it is stale at once); the next comes
// as soon as the link is back. budget_s is the goal, handshake + 3 RTT,
// with the handshake measured as a cold dial on the same link.
//
//	link-alive:   a short sleep that the TCP connection survived
//	link-reset:   the old connection is gone (reset at the wake)
//	network-late: the network is back 1 s after the wake; the dials begun
//	              before then lost their bytes and never finish
func BenchmarkWake(b *testing.B) {
	const rtt = 50 * time.Millisecond
	for _, sc := range []string{"link-alive", "link-reset", "network-late"} {
		b.Run(sc, func(b *testing.B) {
			sshd := sshdtest.Start(b)
			root := b.TempDir()
			must(b, os.MkdirAll(filepath.Join(root, "prepared", "B1"), 0o755))
			must(b, os.WriteFile(filepath.Join(root, "prepared", "B1", "prompts.jsonl"), []byte(prompts("B1", 100)), 0o644))
			must(b, os.WriteFile(filepath.Join(root, "prepared", "B1", "raw_responses.jsonl"), []byte(records("B1", 0, 50)), 0o644))
			clk := newSleepClock()
			h, px := wakeHost(b, sshd, clk, rtt)
			dialStart := time.Now()
			cold, _ := wakeHost(b, sshd, nil, rtt)
			handshake := time.Since(dialStart)
			cold.Close()
			w := NewWatcher(h, Options{Host: "bench", Root: root, ServerURL: "http://127.0.0.1:1", Now: clk.Wall}, nil)
			var total, linked time.Duration
			n := 0
			for b.Loop() {
				if s := w.Poll(context.Background()); s.Connection.Stale() {
					b.Fatalf("not fresh before the sleep: %+v", s.Connection)
				}
				var usable time.Time
				switch sc {
				case "link-alive":
					clk.sleep(7 * time.Hour)
					usable = time.Now()
					w.Poll(context.Background())
				case "link-reset":
					clk.sleep(7 * time.Hour)
					usable = time.Now()
					px.Reset()
					w.Poll(context.Background())
				case "network-late":
					px.SetMode(faultproxy.BlackHole)
					clk.sleep(7 * time.Hour)
					w.Poll(context.Background())
					time.Sleep(time.Second)
					usable = time.Now()
					px.SetMode(faultproxy.Forward)
				}
				linked += freshAfterWake(b, h, w).Sub(usable)
				total += time.Since(usable)
				n++
			}
			avg := total / time.Duration(n)
			b.ReportMetric(avg.Seconds(), "s/wake")
			b.ReportMetric(linked.Seconds()/float64(n), "link_s")
			b.ReportMetric(avg.Seconds()/rtt.Seconds(), "RTTs/wake")
			b.ReportMetric((handshake + 3*rtt).Seconds(), "budget_s")
		})
	}
}

// freshAfterWake waits for the link to be back, then polls until a
// snapshot is fresh; it returns when the link was back.
func freshAfterWake(b *testing.B, h *remote.SSH, w *Watcher) time.Time {
	b.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		if st := h.State(); st.Phase == remote.Connected {
			if s := w.Poll(context.Background()); !s.Connection.Stale() {
				return st.Since
			}
		}
		select {
		case <-h.Changed():
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			b.Fatalf("no fresh figures 2 min after the wake: %+v", h.State())
		}
	}
}
