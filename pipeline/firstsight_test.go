package pipeline

import (
	"context"
	"math"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// dialing is a host whose link is still being dialled: every read fails
// with ErrDisconnected until up, as the dashboard's SSH host does while
// its first poll races the dial.
type dialing struct {
	remote.Host
	mu sync.Mutex
	up bool
}

func (d *dialing) State() remote.ConnState {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.up {
		return remote.ConnState{Phase: remote.Connected, Sessions: 1}
	}
	return remote.ConnState{Phase: remote.Connecting}
}

func (d *dialing) err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.up {
		return nil
	}
	return remote.ErrDisconnected
}

func (d *dialing) Stat(ctx context.Context, p string) (remote.FileInfo, error) {
	if err := d.err(); err != nil {
		return remote.FileInfo{}, err
	}
	return d.Host.Stat(ctx, p)
}

func (d *dialing) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Host.ReadAt(ctx, p, off, n)
}

func (d *dialing) Glob(ctx context.Context, pat string) ([]string, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Host.Glob(ctx, pat)
}

func (d *dialing) Exec(ctx context.Context, argv ...string) (remote.ExecResult, error) {
	if err := d.err(); err != nil {
		return remote.ExecResult{}, err
	}
	return d.Host.Exec(ctx, argv...)
}

func (d *dialing) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Host.DialTCP(ctx, addr)
}

// The first poll equals a long watch however many polls failed before the
// host first answered (a dashboard polls while its link dials): the old
// script's category stuck for 25 minutes is stalled, timed from its
// header's evidence, and the log's 25-minute-old "1.1 req/s" is no rate.
// Before, the first answered poll was taken for a second look: the header
// read then was "just written" (the stall timed from the dashboard's
// opening) and the progress line fresh (66.0/min and an ETA).
func TestFirstAnsweredPollIsAFirstRead(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now().Truncate(time.Second)
	header := c.now().Add(-25 * time.Minute)
	root, log := pyNight(t, header)
	appendTo(t, log, "150/300 (0 err) 1.1 req/s avg_comp=236tok ETA=2.3m\n")
	startIn(t, root, "exec 3>>logs/inference_all.log; while :; do sleep 1; done", "python3", "run_inference.py")
	touch(t, log, header)
	for _, failed := range []int{0, 1, 3} {
		h := &dialing{Host: remote.Local{}}
		w := NewWatcher(h, Options{Root: root, Host: "gpu", Now: c.now, ServerURL: closedURL(t), StallAfter: 10 * time.Minute}, nil)
		for range failed {
			if s := poll(w); s.Connection.State.Up() {
				t.Fatalf("a poll while dialling: link %s", s.Connection.State)
			}
		}
		h.mu.Lock()
		h.up = true
		h.mu.Unlock()
		var s snapshot.Snapshot
		deadline := time.Now().Add(30 * time.Second)
		for s = poll(w); !snapshot.Alive(s.Worker.State) && time.Now().Before(deadline); s = rescanPoll(w) {
			time.Sleep(100 * time.Millisecond) // the holder's fd shows in /proc a moment after it starts
		}
		b3 := catByName(t, s, "B3_magicoder")
		if b3.State != snapshot.StateStalled || !strings.HasPrefix(b3.Reason, "no new records for 25m") || b3.RatePerMin != 0 || b3.ETASeconds != nil {
			t.Fatalf("%d polls failed before: B3 %s (%q) rate %.1f ETA %v; worker %+v", failed, b3.State, b3.Reason, b3.RatePerMin, b3.ETASeconds, s.Worker)
		}
	}
}

// A writer found holding a category's raw_responses.jsonl open, with a
// worker log that names nothing (a buffered stdout: the relaunch's empty
// log), works on that category: running, not partial. Its rate is
// witnessed at first sight by its records' own times (the old script's
// "timestamp"; parse.WitnessedRate), which a one-shot status and the
// report read too: a rate and an ETA at the first look and while it
// writes on.
func TestWriterOfACategoryFileWorksOnIt(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now().Truncate(time.Second)
	root, log := pyNight(t, c.now().Add(-time.Hour))
	write(t, log, "") // > logs/inference_all.log, and python's stdout still in its buffer
	raw := filepath.Join(root, "prepared", "B3_magicoder", "raw_responses.jsonl")
	for i := 19; i >= 0; i-- { // one record every 4 s
		appendTo(t, raw, pyRecords("B3_magicoder", 1, c.now().Add(-time.Duration(i)*4*time.Second)))
	}
	touch(t, raw, c.now())
	startIn(t, root, "exec 3>>prepared/B3_magicoder/raw_responses.jsonl 1>>logs/inference_all.log; while :; do sleep 1; done", "python3", "run_inference.py")
	w := localWatcher(t, root, c, Options{StallAfter: 10 * time.Minute})
	var s snapshot.Snapshot
	deadline := time.Now().Add(30 * time.Second)
	for s = poll(w); !snapshot.Alive(s.Worker.State) && time.Now().Before(deadline); s = rescanPoll(w) {
		time.Sleep(100 * time.Millisecond)
	}
	if s.Worker.Category != "B3_magicoder" || s.Worker.Source != "proc" {
		t.Fatalf("worker %+v", s.Worker)
	}
	if b3 := catByName(t, s, "B3_magicoder"); b3.State != snapshot.StateRunning || math.Abs(b3.RatePerMin-15) > 0.01 || b3.ETASeconds == nil {
		t.Fatalf("first look: B3 %s rate %.2f ETA %v", b3.State, b3.RatePerMin, b3.ETASeconds)
	}
	for i := 0; i < 8; i++ { // one record every 4 s
		c.advance(4 * time.Second)
		appendTo(t, raw, pyRecords("B3_magicoder", 1, c.now()))
		touch(t, raw, c.now())
		s = poll(w)
	}
	b3 := catByName(t, s, "B3_magicoder")
	if b3.State != snapshot.StateRunning || b3.RatePerMin <= 0 || b3.ETASeconds == nil {
		t.Fatalf("after 8 records 4 s apart: B3 %s rate %.1f/min ETA %v", b3.State, b3.RatePerMin, b3.ETASeconds)
	}
}

// A worker whose process is stopped (SIGSTOP, Ctrl-Z: /proc says T) is
// alive and writes nothing: its category is running with the reason and no
// rate or ETA at once, not a rate kept from before (the review's cold
// status at +50 s said "running … ETA 2m23s").
func TestFrozenWorkerClaimsNoRate(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now().Truncate(time.Second)
	root, log := pyNight(t, c.now().Add(-time.Hour))
	raw := filepath.Join(root, "prepared", "B3_magicoder", "raw_responses.jsonl")
	appendTo(t, log, "150/300 (0 err) 20.4 req/s avg_comp=236tok ETA=7s\n") // the last progress line, just written
	appendTo(t, raw, pyRecords("B3_magicoder", 150, c.now()))
	touch(t, raw, c.now())
	pid := startIn(t, root, "exec 3>>prepared/B3_magicoder/raw_responses.jsonl 1>>logs/inference_all.log; while :; do sleep 1; done", "python3", "run_inference.py")
	w := localWatcher(t, root, c, Options{StallAfter: 10 * time.Minute})
	var s snapshot.Snapshot
	deadline := time.Now().Add(30 * time.Second)
	for s = poll(w); !snapshot.Alive(s.Worker.State) && time.Now().Before(deadline); s = rescanPoll(w) {
		time.Sleep(100 * time.Millisecond)
	}
	must(t, syscall.Kill(pid, syscall.SIGSTOP))
	defer syscall.Kill(pid, syscall.SIGCONT)
	deadline = time.Now().Add(10 * time.Second)
	for s = poll(w); !s.Worker.Frozen && time.Now().Before(deadline); s = poll(w) {
		time.Sleep(50 * time.Millisecond)
	}
	b3 := catByName(t, s, "B3_magicoder")
	if !s.Worker.Frozen || b3.State != snapshot.StateRunning || b3.Reason != parse.FrozenReason || b3.RatePerMin != 0 || b3.ETASeconds != nil || s.ETASeconds != nil {
		t.Fatalf("stopped: worker %+v; B3 %s (%q) rate %.1f ETA %v", s.Worker, b3.State, b3.Reason, b3.RatePerMin, b3.ETASeconds)
	}
	must(t, syscall.Kill(pid, syscall.SIGCONT))
	deadline = time.Now().Add(10 * time.Second)
	for s = poll(w); s.Worker.Frozen && time.Now().Before(deadline); s = poll(w) {
		time.Sleep(50 * time.Millisecond)
	}
	if b3 := catByName(t, s, "B3_magicoder"); s.Worker.Frozen || b3.Reason == parse.FrozenReason {
		t.Fatalf("continued: worker %+v; B3 %s (%q)", s.Worker, b3.State, b3.Reason)
	}
}

// rescanPoll polls once more, the process table scanned again: a test's
// clock stands still, so a scan that ran before the started process had
// opened its files would not run again by itself for scanEvery (what
// Watcher.Rescan does after a launch).
func rescanPoll(w *Watcher) snapshot.Snapshot {
	w.Rescan()
	return poll(w)
}
