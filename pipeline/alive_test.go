package pipeline

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

func TestWorkerStateTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		f     workerFacts
		state snapshot.WorkerState
		byYou bool
	}{
		{workerFacts{Known: false}, snapshot.WorkerUnknown, false},
		{workerFacts{Known: true, Alive: true, Phase: parse.WorkerRunning, PID: 7}, snapshot.WorkerRunning, false},
		{workerFacts{Known: true, Alive: true, Killed: true, PID: 7}, snapshot.WorkerRunning, false}, // a kill that has not landed yet
		{workerFacts{Known: true, Killed: true, Phase: parse.WorkerStopped, PID: 7, Ran: true}, snapshot.WorkerStopped, true},
		{workerFacts{Known: true, Killed: true, PID: 7, Ran: true}, snapshot.WorkerStopped, true}, // the Python script: no worker.json
		{workerFacts{Known: true, Killed: true, Phase: parse.WorkerDone, PID: 7, Ran: true}, snapshot.WorkerExited, false},
		{workerFacts{Known: true, Phase: parse.WorkerDone, Ran: true}, snapshot.WorkerExited, false},
		{workerFacts{Known: true, Finished: true, Ran: true}, snapshot.WorkerExited, false},
		{workerFacts{Known: true, Phase: parse.WorkerStopped, Ran: true}, snapshot.WorkerStopped, false},
		{workerFacts{Known: true, Phase: parse.WorkerFailed, JSONError: "boom", Ran: true}, snapshot.WorkerDied, false},
		{workerFacts{Known: true, Phase: parse.WorkerRunning, PID: 9, Ran: true}, snapshot.WorkerDied, false},
		{workerFacts{Known: true, Phase: parse.WorkerWaitingServer, PID: 9, Ran: true}, snapshot.WorkerDied, false},
		{workerFacts{Known: true, Ran: true}, snapshot.WorkerDied, false},
		{workerFacts{Known: true}, snapshot.WorkerNone, false},
	} {
		state, reason, byYou := workerStateFor(c.f)
		if state != c.state || byYou != c.byYou {
			t.Errorf("%+v: %s (by you %v), want %s (%v)", c.f, state, byYou, c.state, c.byYou)
		}
		if (state == snapshot.WorkerDied || state == snapshot.WorkerStopped || state == snapshot.WorkerExited) && reason == "" {
			t.Errorf("%+v: %s without a reason", c.f, state)
		}
	}
}

// Every spelling of the root is the root (finding 13); relative ones need
// the cwd, which isWorkerCmdline cannot know, so it says no.
func TestWorkerRootSpellings(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]bool{
		"synthwatch\x00worker\x00--root\x00/data/r\x00":               true,
		"synthwatch\x00worker\x00--root\x00/data/r/\x00":              true,
		"synthwatch\x00worker\x00--root\x00/data/r/./\x00":            true,
		"synthwatch\x00worker\x00--root=/data/r/\x00--only\x00B1\x00": true,
		"synthwatch\x00worker\x00--root=/data/r\x00":                  true,
		"synthwatch\x00worker\x00--root\x00/data/other\x00":           false,
		"synthwatch\x00worker\x00--root\x00.\x00":                     false, // needs the cwd
		"synthwatch\x00status\x00--root\x00/data/r\x00":               false,
		"vim\x00/data/r/logs/inference_all.log\x00":                   false,
	} {
		if got := isWorkerCmdline([]byte(cmd), "/data/r"); got != want {
			t.Errorf("%q: %v", cmd, got)
		}
	}
}

// A worker that started and ended between two polls leaves a start and an
// exit; a pid change leaves an exit of the old pid and a start of the new.
func TestWorkerEventsBetweenPolls(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, pid := runningRoot(t, c)
	w := localWatcher(t, root, c, Options{})
	s := poll(w)
	if s.Worker.State != snapshot.WorkerRunning || s.Worker.PID != pid {
		t.Fatalf("start: %+v", s.Worker)
	}
	other := fakeWorker(t, root)
	writeWorkerJSON(t, root, parse.WorkerState{PID: other, State: parse.WorkerRunning, Category: "B2", StartedAt: c.now(), UpdatedAt: c.now()})
	c.advance(2 * time.Second)
	s = poll(w)
	if s.Worker.PID != other || !hasEvent(s, "worker_exited", fmt.Sprintf("worker pid %d ended", pid)) ||
		!hasEvent(s, "worker_started", fmt.Sprintf("pid %d, after pid %d", other, pid)) {
		t.Fatalf("pid change: %+v %+v", s.Worker, s.Events)
	}
	// other dies; 999999 runs and ends between two polls
	must(t, syscall.Kill(other, syscall.SIGKILL))
	time.Sleep(100 * time.Millisecond) // a zombie until reaped: gone all the same
	writeWorkerJSON(t, root, parse.WorkerState{PID: 999999, State: parse.WorkerDone, StartedAt: c.now(), UpdatedAt: c.now().Add(time.Second)})
	c.advance(2 * time.Second)
	s = poll(w)
	if !hasEvent(s, "worker_started", "pid 999999") || !hasEvent(s, "worker_exited", "pid 999999") || !hasEvent(s, "worker_exited", fmt.Sprintf("pid %d", other)) {
		t.Fatalf("between polls: %+v", s.Events)
	}
}

func hasEvent(s snapshot.Snapshot, kind, text string) bool {
	for _, e := range s.Events {
		if e.Kind == kind && strings.Contains(e.Text, text) {
			return true
		}
	}
	return false
}

// The kill note names one process: a reused pid (another start) is not it.
func TestKillNote(t *testing.T) {
	t.Parallel()
	n, ok := parseKillNote([]byte(fmt.Sprintf(killNoteFormat, 42, 12345, 1700000000)))
	if !ok || n.pid != 42 || n.start != 12345 || n.at.Unix() != 1700000000 {
		t.Fatalf("parse: %+v %v", n, ok)
	}
	if !n.names(42, 12345) || !n.names(42, 0) || n.names(42, 999) || n.names(43, 12345) {
		t.Fatal("names")
	}
	var none *killNote
	if none.names(42, 0) {
		t.Fatal("nil note names a pid")
	}
	if _, ok := parseKillNote([]byte("garbage\n")); ok {
		t.Fatal("garbage parsed")
	}
}
