package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

func actionEvents(tl *timeline.Timeline) []snapshot.Event {
	var out []snapshot.Event
	for _, e := range tl.Recent(1000) {
		if e.Kind == "action" {
			out = append(out, e)
		}
	}
	return out
}

// An action's result goes to the timeline (and so to the history file) from
// the action's Cmd: Update neither writes it when the action starts nor when
// its answer arrives.
func TestActionResultIsWrittenInTheCmdNotInUpdate(t *testing.T) {
	f := newFake()
	f.snap = running()
	path := filepath.Join(t.TempDir(), "state", "host.jsonl")
	f.tl = timeline.New(100, path)
	m, _ := newModel(f, 120, 40, Config{})
	m = step(m, press("L"))
	nm, cmd := m.Update(press("y"))
	m = nm.(Model)
	if cmd == nil {
		t.Fatal("yes started no action")
	}
	if n := len(actionEvents(f.tl)); n != 0 {
		t.Fatalf("Update recorded %d action events before the action ran", n)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("Update touched the history file: %v", err)
	}
	msg := cmd() // the program runs this off the UI goroutine
	evs := actionEvents(f.tl)
	if len(evs) != 1 || evs[0].Text != "launch: worker pid 4343" {
		t.Fatalf("after the Cmd: %+v", evs)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), "launch: worker pid 4343") {
		t.Fatalf("history file after the Cmd: %q %v", data, err)
	}
	m = step(m, msg)
	if n := len(actionEvents(f.tl)); n != 1 {
		t.Fatalf("Update recorded the answer again: %d action events", n)
	}
	if !strings.Contains(screen(m), "✓ launch: worker pid 4343") {
		t.Errorf("result not shown:\n%s", screen(m))
	}
}

// A history file that cannot be written (its directory is a file) costs
// Update nothing: the failed write happens in the Cmd, and the result is
// still shown.
func TestAnUnwritableHistoryDoesNotReachUpdate(t *testing.T) {
	f := newFake()
	f.snap = running()
	block := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(block, nil, 0o644)
	f.tl = timeline.New(100, filepath.Join(block, "host.jsonl"))
	m, _ := newModel(f, 120, 40, Config{})
	m = step(m, press("K"))
	m, msg := run(m, press("y"))
	m = step(m, msg)
	if !strings.Contains(screen(m), "✓ kill: pid 4242 gone") {
		t.Errorf("%s", screen(m))
	}
}

// With two actions running the spinner names the older one, on every
// frame, whatever order the map gives.
func TestSpinnerLabelIsStableWithTwoActions(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, _ := newModel(f, 200, 50, Config{})
	m = step(m, press("K"))
	m = step(m, press("y")) // kill: id 1
	m = step(m, press("L"))
	m = step(m, press("y")) // launch: id 2
	if len(m.busy) != 2 {
		t.Fatalf("busy %v", m.busy)
	}
	for i := 0; i < 200; i++ {
		if got := m.busyLabel(); got != "killing pid 4242… 0s (+1), esc to cancel" {
			t.Fatalf("render %d: label %q", i, got)
		}
		if scr := screen(m); !strings.Contains(scr, "killing pid 4242… 0s (+1)") || strings.Contains(scr, "launching…") {
			t.Fatalf("render %d:\n%s", i, scr)
		}
	}
	m = step(m, actionMsg{id: 1, what: "kill", text: "pid 4242 gone"})
	if got := m.busyLabel(); got != "launching… 0s, esc to cancel" {
		t.Fatalf("after kill ended: %q", got)
	}
}

// Update's returned model keeps what the Cmd-making helpers set on it
// (polling, the action id), whatever the evaluation order.
func TestCmdHelpersMutateTheReturnedModel(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, _ := newModel(f, 120, 40, Config{})
	m = step(m, pollDue{gen: m.gen})
	if !m.polling {
		t.Fatal("pollDue: the returned model does not know a poll runs")
	}
	id := m.actionID
	m = step(m, press("L"))
	m = step(m, press("y"))
	if m.actionID != id+1 || len(m.busy) != 1 {
		t.Fatalf("action: id %d→%d, busy %v", id, m.actionID, m.busy)
	}
}
