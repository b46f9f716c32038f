package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// neverHost is an SSH host that has never connected: every call fails.
type neverHost struct {
	linkedHost
}

func (d *neverHost) Stat(context.Context, string) (remote.FileInfo, error) {
	return remote.FileInfo{}, remote.ErrDisconnected
}
func (d *neverHost) ReadAt(context.Context, string, int64, int) ([]byte, error) {
	return nil, remote.ErrDisconnected
}
func (d *neverHost) Glob(context.Context, string) ([]string, error) {
	return nil, remote.ErrDisconnected
}

// A link that never came up says so, and why, once per different error, in
// the timeline; never "figures are from 00:00:00".
func TestNeverConnectedSaysWhy(t *testing.T) {
	t.Parallel()
	c := newClock()
	refused := "dial tcp 127.0.0.1:1: connect: connection refused"
	h := &neverHost{linkedHost{Host: remote.Local{}, st: remote.ConnState{Phase: remote.Reconnecting, Attempt: 1, Err: refused, NextTry: c.now().Add(2 * time.Second)}}}
	w := NewWatcher(h, Options{Root: t.TempDir(), Now: c.now, ServerURL: closedURL(t)}, nil)
	s := poll(w)
	h.st.Attempt, h.st.NextTry = 2, c.now().Add(4*time.Second)
	s = poll(w)
	if s.Connection.Error != refused || s.Connection.Attempt != 2 || s.Connection.NextTry == nil || s.Connection.LastContact != nil {
		t.Errorf("connection %+v", s.Connection)
	}
	if got := strings.Join(s.Warnings, "|"); got != "no contact with the host: never connected" {
		t.Errorf("warnings %q", got)
	}
	var errs []snapshot.Event
	for _, e := range s.Events {
		if e.Kind == "connect_error" {
			errs = append(errs, e)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Text, refused) || !strings.Contains(errs[0].Text, "next try") {
		t.Errorf("connect_error events %+v", s.Events)
	}
	h.st = remote.ConnState{Phase: remote.Failed, Err: "ssh u@127.0.0.1:1: ssh: unable to authenticate"}
	s = poll(w)
	if e := s.Events[len(s.Events)-1]; e.Kind != "connect_failed" || !strings.Contains(e.Text, "unable to authenticate") {
		t.Errorf("auth failure event %+v", s.Events)
	}
}
