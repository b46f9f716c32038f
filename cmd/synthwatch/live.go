package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
)

// Live is the dashboard's Backend (tui.Backend) over a real host and
// pipeline watcher. It lives here, in the composition root, so that tui
// never imports remote: the dashboard sees the link only as
// snapshot.Connection.
type Live struct {
	Name    string
	Remote  remote.Host
	Watcher *pipeline.Watcher
	Actor   actions.Actor
	Grace   time.Duration
	// Reconnect drops the link and dials again at once (nil: a local root).
	Reconnect func()
	// RootCheck says whether the root is a pipeline root (has prepared/);
	// it runs inside Poll while no category has been found.
	RootCheck func(ctx context.Context) error
	// Polled, when set, is called after each poll (the dashboard's drop to
	// one P once the first table is in).
	Polled func()

	coldErr string // the last cold batch error logged
}

func (l *Live) Host() string { return l.Name }

func (l *Live) Poll(ctx context.Context) snapshot.Snapshot {
	s := l.Watcher.Poll(ctx)
	if l.Polled != nil {
		l.Polled()
	}
	// a cold poll read request by request costs only time: say why, once
	if _, _, err := l.Watcher.ColdStats(); err != nil && err.Error() != l.coldErr {
		l.coldErr = err.Error()
		slog.Warn("the cold poll's batch failed; it was read request by request", "host", l.Name, "err", err)
	}
	if len(s.Categories) == 0 && s.Connection.State.Up() && l.RootCheck != nil {
		if err := l.RootCheck(ctx); err != nil {
			s.Warn(snapshot.WarnRoot, err.Error())
		}
	}
	return s
}

func (l *Live) Logs() ([]string, []string) {
	return l.Watcher.WorkerLog.Lines(), l.Watcher.ServerLog.Lines()
}

func (l *Live) Timeline() *timeline.Timeline { return l.Watcher.Timeline() }

// Link reads the host's link state; no round trip, so the dashboard may ask
// it on every tick.
func (l *Live) Link() snapshot.Connection { return l.Watcher.Link() }

func (l *Live) Launch(ctx context.Context, only []string) (int, error) {
	return l.Actor.Launch(ctx, only)
}

func (l *Live) Kill(ctx context.Context, pid int) (string, error) {
	return l.Actor.Kill(ctx, pid, l.Grace)
}

func (l *Live) Restart(ctx context.Context, cat string, all []string) (int, error) {
	r, err := l.Actor.Restart(ctx, cat, all, l.Grace, 0)
	return r.PID, err
}

func (l *Live) ReconnectNow() {
	if l.Reconnect != nil {
		l.Reconnect()
	}
}
