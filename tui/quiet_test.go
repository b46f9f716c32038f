package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// A link up but silent for two polls is not "connected": the header says
// when the host last answered, the rows lose their ETA (and are drawn
// dimmed), the header's ETA is blank; an answer makes it connected again.
// The fleet row calls the same test (snapshot.Connection.Quiet).
func TestQuietLinkIsNotConnected(t *testing.T) {
	f := newFake()
	f.snap = running()
	eta := 600.0
	f.snap.ETASeconds = &eta
	for i := range f.snap.Categories {
		f.snap.Categories[i].ETASeconds = &eta
	}
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0)}
	m, c := newModel(f, 120, 40, Config{PollEvery: 2 * time.Second})
	if scr := screen(m); !strings.Contains(scr, "● connected") || !strings.Contains(scr, "ETA 10m") {
		t.Fatalf("a live link:\n%s", scr)
	}
	if m.row(c.t).stale {
		t.Fatal("the fleet row is stale on a live link")
	}
	c.t = t0.Add(12 * time.Second) // no answer since
	m = step(m, tickMsg(c.t))
	scr := screen(m)
	head := strings.SplitN(scr, "\n", 2)[0]
	if strings.Contains(head, "connected") || !strings.Contains(head, "last contact 12s ago") || strings.Contains(head, "ETA 10m") {
		t.Fatalf("a quiet link's header: %q", head)
	}
	if strings.Contains(scr, "10m") {
		t.Fatalf("an ETA is shown on a quiet link:\n%s", scr)
	}
	if !m.stale() || !m.row(c.t).stale {
		t.Fatal("the figures and the fleet row are not stale on a quiet link")
	}
	f.conn.LastContact = tp(c.t)
	m = step(m, pollMsg{gen: m.gen, snap: f.snap})
	if scr := screen(m); !strings.Contains(scr, "● connected") {
		t.Fatalf("connected again after an answer:\n%s", scr)
	}
}
