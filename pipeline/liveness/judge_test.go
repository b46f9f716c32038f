package liveness

import (
	"fmt"
	"testing"

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

// The kill note names one process: a reused pid (another start) is not it.
func TestKillNote(t *testing.T) {
	t.Parallel()
	n, ok := parseKillNote([]byte(fmt.Sprintf(parse.KillNoteFormat, 42, 12345, 1700000000)))
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
