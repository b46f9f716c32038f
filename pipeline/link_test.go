package pipeline

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// status --json's connection.state keeps its strings (schema 1): each of
// remote's phases reads as it always did.
func TestLinkPhaseKeepsTheJSONStrings(t *testing.T) {
	t.Parallel()
	for _, p := range []remote.Phase{remote.Connecting, remote.Connected, remote.Reconnecting, remote.Failed, remote.Closed} {
		if got := linkPhase(p); string(got) != p.String() {
			t.Errorf("%v reads as %q", p, got)
		}
	}
	b, _ := json.Marshal(snapshot.Connection{State: snapshot.LinkLocal})
	if want := `{"state":"local","rtt_ms":0,"last_contact":null,"drops":0}`; string(b) != want {
		t.Errorf("%s, want %s", b, want)
	}
}

var _ remote.Linked = (*linkedHost)(nil) // watcher_test.go's host with a link

// Link reads the host's state through remote.Linked; a host without it is
// a local root.
func TestLinkReadsTheHostThroughLinked(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	o := Options{Root: t.TempDir(), ServerURL: "http://127.0.0.1:1", Now: func() time.Time { return now }}
	h := &linkedHost{Host: remote.Local{}, st: remote.ConnState{Phase: remote.Reconnecting, Attempt: 3, NextTry: now.Add(5 * time.Second),
		LastContact: now.Add(-time.Minute), RTT: 1500 * time.Microsecond, Err: "refused"}}
	c := NewWatcher(h, o, nil).Link()
	if c.State != snapshot.LinkReconnecting || c.Attempt != 3 || c.NextTry == nil || !c.NextTry.Equal(now.Add(5*time.Second)) ||
		c.LastContact == nil || c.Error != "refused" || c.RTT() != 1500*time.Microsecond || !c.Stale() || c.State.Up() {
		t.Errorf("link %+v", c)
	}
	if c := NewWatcher(remote.Local{}, o, nil).Link(); c.State != snapshot.LinkLocal || c.Stale() || !c.State.Up() {
		t.Errorf("local %+v", c)
	}
}
