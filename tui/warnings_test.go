package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// The header picks warnings by kind, not by the words they begin with.
func TestHeaderPicksWarningsByKind(t *testing.T) {
	f := newFake()
	f.snap = running()
	f.conn = snapshot.Connection{State: snapshot.LinkReconnecting, LastContact: tp(t0.Add(-5 * time.Minute)), Attempt: 2}
	f.snap.Warn(snapshot.WarnCategory, "no contact is what this category's text says, but it is a category's")
	f.snap.Warn(snapshot.WarnNoContact, "the link is down: figures from 02:55")
	f.snap.Warn(snapshot.WarnWorkerJSONStale, "the state file is 2m old while pid 4242 is alive")
	m, _ := newModel(f, 200, 50, Config{})
	head := strings.Join(strings.Split(screen(m), "\n")[:8], "\n")
	if strings.Contains(head, "⚠ no contact is what") {
		t.Errorf("a category warning in the header:\n%s", head)
	}
	for _, want := range []string{"⚠ the link is down: figures from 02:55", "⚠ the state file is 2m old"} {
		if !strings.Contains(head, want) {
			t.Errorf("no %q in the header:\n%s", want, head)
		}
	}
	// the link is back: its no-contact warning goes, the other stays
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0)}
	m = step(m, tickMsg(t0))
	head = strings.Join(strings.Split(screen(m), "\n")[:8], "\n")
	if strings.Contains(head, "the link is down") || !strings.Contains(head, "the state file is 2m old") {
		t.Errorf("after reconnecting:\n%s", head)
	}
}

// Warn keeps status --json's warnings (texts, in order) beside the kinds.
func TestWarnKeepsTheTextsForJSON(t *testing.T) {
	s := snapshot.Snapshot{Warnings: []string{}}
	s.Warn(snapshot.WarnRoot, "a")
	s.Warn(snapshot.WarnNoContact, "b")
	if strings.Join(s.Warnings, ",") != "a,b" || len(s.Alerts) != 2 || s.Alerts[1].Kind != snapshot.WarnNoContact {
		t.Fatalf("%q %+v", s.Warnings, s.Alerts)
	}
}
