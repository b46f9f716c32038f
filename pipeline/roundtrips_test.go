package pipeline

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A poll's round trips, counted at the proxy (faultproxy's Turns), not
// timed, on the root BenchmarkWatcherIdlePoll reads (a live worker, and a
// refused /metrics whose probe rides in the reads' flight). Through the
// Go agent, a steady poll is its request and the answer, whether records
// grew or the poll is a full one that reads the vitals too; a cold one
// adds the agent's channel. The fallback's poll is an exec of its own:
// the channel and the exec, its script and ops packed on the command line
// (remote.PackCommand) once the host said it unpacks them; sent plain, the
// script waits on stdin for a third (sshd gives a session channel no
// window before its command starts). A first contact (no hint of the
// host yet) asks the agent's launcher and the fallback at once, the
// fallback packed (most hosts unpack), as a cold poll does with the
// hint's "no agent" and "unpacks" (a one-shot status's next run): each
// in two (5 before, the launcher's "none here" and then the fallback
// sent as it is); it may count three: the
// launcher's "none here" comes first, and when the fallback runs longer
// than a round trip on the host, the client's close of the launcher's
// channel is a send its answer follows (the proxy cannot tell channels
// apart): on the clock it is two and the fallback's run.
//
// The agent's case needs the built binary (SW_E2E=1, as testbin); the
// fallback's runs wherever sshd does.
func TestPollRoundTrips(t *testing.T) {
	s := sshdtest.Start(t)
	root := t.TempDir()
	for _, n := range []string{"B1", "B2", "B3", "B4"} {
		write(t, filepath.Join(root, "prepared", n, parse.PromptsFile), prompts(n, 100))
		write(t, filepath.Join(root, "prepared", n, parse.RawFile), records(n, 0, 50))
	}
	write(t, filepath.Join(root, "logs", "inference_all.log"), strings.Repeat("50/100 (0 err) 1.0 req/s avg_comp=200tok ETA=1m\n", 50))
	write(t, filepath.Join(root, "logs", "sglang_inference.log"), "[2026-01-01 00:00:00] The server is fired up and ready to roll!\n")
	pid := fakeWorker(t, root)
	writeWorkerJSON(t, root, parse.WorkerState{PID: pid, State: parse.WorkerRunning, Category: "B2", UpdatedAt: time.Now()})
	t.Setenv("SSH_AUTH_SOCK", "")
	for _, tc := range []struct {
		name, reader             string
		hint                     string // the servers hint of a past run
		cold, steady, grew, full int64  // round trips of a poll
		coldOrOneMore            bool   // the cold poll may count one more
	}{
		{"agent", "go agent", "", 2, 1, 1, 1, true},
		{"fallback", "fallback", "", 2, 2, 2, 2, true},
		{"fallback_hinted", "fallback", `{"no_agent":"` + remote.AgentProto + `","unpacks":true}`, 2, 2, 2, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "none")
			if tc.reader == "go agent" {
				bin = testbin.Path(t)
			}
			p := newProxied(t, s)
			h := p.dial(t, "ServerAliveInterval=3600")
			t.Cleanup(func() { h.Close() })
			o := Options{Host: "rtt", Root: root, ServerURL: "http://127.0.0.1:1", WorkerBin: bin, HintPath: filepath.Join(t.TempDir(), "hint.json")}
			if tc.hint != "" {
				write(t, o.HintPath, tc.hint)
			}
			w := NewWatcher(h, o, nil)
			// 25 ms each way: what the client sends together hears no
			// answer between its sends, however it is scheduled
			p.px.SetDelay(25 * time.Millisecond)
			// the link's first keepalive is a round trip of its own; with
			// that interval, the last until the test ends
			for end := time.Now().Add(30 * time.Second); h.State().RTT == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatal("no keepalive answered in 30 s")
				}
			}
			check := func(what string, want int64) snapshot.Snapshot {
				t.Helper()
				snap, got := rttPoll(t, w, p.px)
				if !strings.HasPrefix(snap.Connection.Reader, tc.reader) || snap.Worker.PID != pid {
					t.Fatalf("%s poll: read by %q, worker %+v", what, snap.Connection.Reader, snap.Worker)
				}
				if !turnsAre(got, want, what == "cold" && tc.coldOrOneMore) {
					t.Errorf("a %s poll by the %s: %d round trips, want %d", what, tc.reader, got, want)
				}
				return snap
			}
			check("cold", tc.cold)
			// what the next run's cold poll starts from
			if h := ReadServersHint(o.HintPath); tc.reader == "fallback" && !noAgentUnpacks(h) {
				t.Fatalf("the hint after a cold poll by the fallback: %+v, want no agent and unpacks", h)
			} else if plat := runtime.GOOS + "-" + runtime.GOARCH; tc.reader == "go agent" && (h == nil || h.Platform != plat) {
				t.Fatalf("the hint after a cold poll by the agent: %+v, want the platform its hello named, %s", h, plat)
			}
			done := func(s snapshot.Snapshot) int64 { return catByName(t, s, "B1").Done }
			var n0 int64
			for range 3 {
				n0 = done(check("steady", tc.steady))
			}
			appendTo(t, filepath.Join(root, "prepared", "B1", parse.RawFile), records("B1", int(n0), 20))
			if n := done(check("grown", tc.grew)); n != n0+20 {
				t.Fatalf("B1 done %d after 20 more records, want %d", n, n0+20)
			}
			w.polls += 30 - w.polls%30 // prompts.jsonl and runs.jsonl too
			paceVitals(w, 0, 0)        // the vitals and df are due: a first read
			check("full", tc.full)
		})
	}
}

// turnsAre: got round trips are want, or want+1 where oneMore allows.
func turnsAre(got, want int64, oneMore bool) bool {
	return got == want || oneMore && got == want+1
}

// noAgentUnpacks: h says the host has no agent of this protocol and
// unpacks a packed command.
func noAgentUnpacks(h *ServersHint) bool {
	return h != nil && h.Unpacks && h.NoAgent == remote.AgentProto
}

// rttPoll polls once and returns the round trips it took.
func rttPoll(t *testing.T, w *Watcher, px *faultproxy.Proxy) (snapshot.Snapshot, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := px.Turns.Load()
	snap := w.Poll(ctx)
	if snap.Connection.State != snapshot.LinkConnected {
		t.Fatalf("link %s: %s", snap.Connection.State, snap.Connection.Error)
	}
	return snap, px.Turns.Load() - before
}

// A command run right after the connect is its channel and its answer,
// 2 round trips, on OpenSSH and on Dropbear alike: the SFTP session opens
// only when something reads a file by itself (a poll through the agent or
// the fallback never does), so Dropbear's refused subsystem and the probe
// after it (settleAfterFailedSubsystem) no longer hold the first exec: 5
// round trips there before, the whole of status's 1.5× the habit's.
// A file read by itself afterwards still works, by SFTP or the shell.
func TestFirstExecRoundTrips(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	for _, srv := range []struct {
		name  string
		start func(testing.TB, ...sshdtest.Option) *sshdtest.Server
	}{{"openssh", sshdtest.Start}, {"dropbear", sshdtest.StartDropbear}} {
		t.Run(srv.name, func(t *testing.T) {
			p := newProxied(t, srv.start(t))
			p.px.SetDelay(25 * time.Millisecond)
			h := p.dial(t, "ServerAliveInterval=3600")
			t.Cleanup(func() { h.Close() })
			before := p.px.Turns.Load()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := h.Exec(ctx, "echo", "ok")
			if err != nil || strings.TrimSpace(string(r.Stdout)) != "ok" {
				t.Fatalf("exec: %v %+v", err, r)
			}
			if got := p.px.Turns.Load() - before; got != 2 {
				t.Errorf("the first exec after the connect: %d round trips, want 2", got)
			}
			f := filepath.Join(t.TempDir(), "f")
			write(t, f, "a file\n")
			if b, err := h.ReadAt(ctx, f, 0, 100); err != nil || string(b) != "a file\n" {
				t.Fatalf("a file read by itself after it: %q %v", b, err)
			}
		})
	}
}
