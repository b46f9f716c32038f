package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// The timeline of a night with the lid closed, as the pipeline reads it
// back on the wake (TestWakeAfterNight): the sleep as one event at the
// wake, and what happened on the host meanwhile at the host's own times.
func nightEvents(lidClosed time.Time) []snapshot.Event {
	return []snapshot.Event{
		{Time: lidClosed.Add(2 * time.Hour), Kind: "category_done", Category: "B1", Text: "B1 done: 20 records"},
		{Time: lidClosed.Add(5 * time.Hour), Kind: "category_done", Category: "B2", Text: "B2 done: 20 records"},
		{Time: lidClosed.Add(5 * time.Hour), Kind: "pipeline_done", Text: "pipeline done: 40 records"},
		{Time: lidClosed.Add(5*time.Hour + time.Minute), Kind: "worker_exited", Text: "worker pid 4242 exited: every category done"},
		{Time: lidClosed.Add(7*time.Hour + 12*time.Minute), Kind: "slept", Text: "laptop slept 7h12m"},
	}
}

// The first key after the night opens the away box: the categories done,
// the job done and the worker's exit at their host times, and the sleep as
// one line, with no link drops.
func TestAwayBoxAfterSleep(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, c := newModel(f, 120, 40, Config{})
	for _, e := range nightEvents(t0) {
		f.tl.Add(e)
	}
	c.t = t0.Add(7*time.Hour + 13*time.Minute)
	m = step(m, press("j"))
	s := screen(m)
	at := func(d time.Duration) string { return t0.Add(d).Local().Format("15:04") }
	for _, want := range []string{
		"While you were away (5 events)",
		"✓ " + at(5*time.Hour) + "  pipeline done: 40 records",
		"✓ " + at(5*time.Hour) + "  B2 done: 20 records",
		"✓ " + at(2*time.Hour) + "  B1 done: 20 records",
		at(7*time.Hour+12*time.Minute) + "  laptop slept 7h12m",
		at(5*time.Hour+time.Minute) + "  worker pid 4242 exited: every category done",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the away box has no %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "link dropped") || strings.Count(s, "laptop slept") != 1 {
		t.Errorf("the sleep is one line, with no drops:\n%s", s)
	}
}

// A wake after hours rings no "no contact for 7h" bell: the link counts as
// lost from the wake, and only a link still down DisconnectAfter later is
// news.
func TestWakeRingsNoDisconnectBell(t *testing.T) {
	now := t0.Add(7*time.Hour + 12*time.Minute)
	n := newNotifier(NotifyConfig{Run: func(string, []byte) error { return nil }}, "gpu", func() time.Time { return now })
	old := running()
	old.Connection = snapshot.Connection{State: snapshot.LinkConnected, LastContact: &t0}
	cur := old
	cur.Connection = snapshot.Connection{State: snapshot.LinkReconnecting, LastContact: &t0}
	cur.Events = nightEvents(t0)
	if cmds := n.changes(old, cur); len(cmds) != 0 || n.downSent {
		t.Errorf("a wake rang %d notices (disconnect sent: %v)", len(cmds), n.downSent)
	}
	now = now.Add(6 * time.Minute) // still down well after the wake: that is news
	if cmds := n.changes(cur, cur); len(cmds) != 1 || !n.downSent {
		t.Errorf("a link down 6 min after the wake rang %d notices (disconnect sent: %v)", len(cmds), n.downSent)
	}
}

// When the link comes back (after a wake, or any reconnect) the next tick
// polls at once, and an older poll's answer is dropped.
func TestLinkBackPollsAtOnce(t *testing.T) {
	f := newFake()
	f.snap = running()
	f.conn = snapshot.Connection{State: snapshot.LinkReconnecting, LastContact: &t0}
	m, _ := newModel(f, 120, 40, Config{})
	gen := m.gen
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, LastContact: &t0}
	nm, cmd := m.Update(tickMsg(t0.Add(time.Second)))
	m = nm.(Model)
	if m.gen != gen+1 || !m.polling || cmd == nil {
		t.Errorf("the link is back: gen %d -> %d, polling %v", gen, m.gen, m.polling)
	}
	nm, _ = m.Update(tickMsg(t0.Add(2 * time.Second)))
	if nm.(Model).gen != m.gen {
		t.Error("a tick with the link up all along polled again")
	}
}
