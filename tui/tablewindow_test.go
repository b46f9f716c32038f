package tui

import (
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// TestTableShowsAWindowThatFollowsTheSelection: more categories than half
// the screen are drawn as a window of rows that follows j/k, with a line
// saying which rows of how many; the log pane keeps its room.
func TestTableShowsAWindowThatFollowsTheSelection(t *testing.T) {
	f := newFake()
	f.snap = many(60)
	f.conn = snapshot.Connection{State: snapshot.LinkConnected}
	m, _ := newModel(f, 120, 40, Config{})
	out := m.render()
	if !strings.Contains(out, "C00000") || strings.Contains(out, "C00020") || !strings.Contains(out, "1–20 of 60 categories") {
		t.Fatalf("first window:\n%s", out)
	}
	for i := 0; i < 25; i++ {
		m = step(m, press("j"))
	}
	out = m.render()
	if !strings.Contains(out, "C00025") || strings.Contains(out, "C00005 ") || !strings.Contains(out, "7–26 of 60 categories") {
		t.Fatalf("after 25 j, C00025 selected:\n%s", out)
	}
	if got := m.selected(); got != "C00025" {
		t.Fatalf("selected %q", got)
	}
	if lines(out) > 40 {
		t.Fatalf("%d lines on a 40-line screen", lines(out))
	}
	// the root shrinks under the window: it stays in range
	f.snap = many(3)
	m = step(m, pollMsg{gen: m.gen, snap: f.snap})
	if out := m.render(); !strings.Contains(out, "C00002") || strings.Contains(out, "of 3 categories") {
		t.Fatalf("after the root shrank:\n%s", out)
	}
}
