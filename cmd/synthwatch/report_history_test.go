package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// The laptop asleep and the link down, which only the dashboard on this
// machine sees, come into the report from the history it keeps of the host
// and root: a sleep from its start to its wake, a drop to its reconnection,
// one with no reconnection said so; an event before the window is left out.
func TestReportMergesTheDashboardsHistory(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	root, _ := reportNight(t, digesttest.Options{})
	now := time.Now().UTC().Truncate(time.Second)
	tl := timeline.New(100, timeline.StatePath("local", root)) // as the dashboard keeps it
	woke := now.Add(-2 * time.Hour)
	tl.Add(snapshot.Event{Time: now.Add(-30 * time.Hour), Kind: "slept", Text: "laptop slept 45m"}) // before the window
	tl.Add(snapshot.Event{Time: woke, Kind: "slept", Text: "laptop slept " + snapshot.FormatDuration(90*time.Minute)})
	tl.Add(snapshot.Event{Time: now.Add(-40 * time.Minute), Kind: "disconnect", Text: "connection lost: read: connection reset by peer"})
	tl.Add(snapshot.Event{Time: now.Add(-35 * time.Minute), Kind: "reconnect", Text: "connected again"})
	tl.Add(snapshot.Event{Time: now.Add(-10 * time.Minute), Kind: "disconnect", Text: "connection lost: EOF"})

	out, code := execCLI(t, "report", "--local", root, "--json")
	var s reportJSON
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil {
		t.Fatalf("report --local --json: code %d, %v: %s", code, err, out)
	}
	var got []digest.Incident
	for _, in := range s.Incidents {
		if in.Kind == digest.KindSlept || in.Kind == digest.KindLinkDown {
			got = append(got, in)
		}
	}
	type want struct {
		kind     string
		from, to time.Time // to zero: no end known
		text     string
	}
	wants := []want{
		{digest.KindSlept, woke.Add(-90 * time.Minute), woke, "this machine slept"},
		{digest.KindLinkDown, now.Add(-40 * time.Minute), now.Add(-35 * time.Minute), "connection reset by peer"},
		{digest.KindLinkDown, now.Add(-10 * time.Minute), time.Time{}, "no reconnection in the history"},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d incidents from the history, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		okEnd := w.to.IsZero() && g.End == nil || g.End != nil && g.End.Equal(w.to)
		if g.Kind != w.kind || !g.Time.Equal(w.from) || !okEnd || !strings.Contains(g.Text, w.text) || g.Lost != nil {
			t.Errorf("incident %d: %+v, want %s from %s to %v with %q and no records lost", i, g, w.kind, w.from, w.to, w.text)
		}
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "dashboard history") {
		t.Errorf("no note of where they came from: %q", s.Notes)
	}
	text, code := execCLI(t, "report", "--local", root)
	if code != 0 || !strings.Contains(text, "slept") || !strings.Contains(text, "1h30m") || !strings.Contains(text, "link_down") {
		t.Errorf("the text report does not show the sleep and the drops (code %d):\n%s", code, text)
	}
}
