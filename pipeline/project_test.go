package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/counts"
	"github.com/synthwatch/synthwatch/pipeline/events"
	"github.com/synthwatch/synthwatch/pipeline/liveness"
	"github.com/synthwatch/synthwatch/pipeline/servers"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/vitals"
	"github.com/synthwatch/synthwatch/pipeline/worklog"
	"github.com/synthwatch/synthwatch/sim"
)

// TestSnapshotOnlyProjects runs a night through a real server (sim on a
// loopback port) and real files: records flow, the category stalls and
// flows again, the server goes down and comes back, the worker finishes.
// After every poll the Snapshot is projected twice: both equal the poll's
// own, and projecting changed nothing the parts or the timeline hold.
func TestSnapshotOnlyProjects(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, pid := runningRoot(t, c)
	srv := sim.New(sim.Options{})
	must(t, srv.Start("127.0.0.1:0"))
	t.Cleanup(srv.Close)
	w := localWatcher(t, root, c, Options{ServerURL: srv.URL(), StallAfter: 3 * time.Minute})
	raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
	step := func(what string, d time.Duration) snapshot.Snapshot {
		t.Helper()
		c.advance(d)
		s := poll(w)
		projectsOnly(t, w, s, what)
		return s
	}
	next := 100
	grow := func(n int) { appendTo(t, raw, records("B2", next, n)); next += n }

	s := step("start", 0)
	if s.Worker.State != snapshot.WorkerRunning || s.Server.Metrics != "ok" {
		t.Fatalf("start: worker %+v server %+v", s.Worker, s.Server)
	}
	for i := 0; i < 3; i++ {
		grow(30)
		s = step("records flow", time.Minute)
	}
	for i := 0; i < 7 && catByName(t, s, "B2").State != snapshot.StateStalled; i++ {
		s = step("quiet", time.Minute)
	}
	if catByName(t, s, "B2").State != snapshot.StateStalled || s.Worker.State != snapshot.WorkerStalled {
		t.Fatalf("no stall: worker %+v B2 %+v", s.Worker, catByName(t, s, "B2"))
	}
	grow(5)
	if s = step("flows again", time.Minute); catByName(t, s, "B2").State != snapshot.StateRunning {
		t.Fatalf("the stall did not end: %+v", catByName(t, s, "B2"))
	}

	addr := srv.Addr()
	srv.Close()
	for i := 0; i < 2; i++ {
		s = step("server down", time.Minute)
	}
	if s.Server.Metrics != "refused" || s.Server.State == snapshot.ServerReady || s.Server.State == snapshot.ServerBusy {
		t.Fatalf("server down: %+v", s.Server)
	}
	back := sim.New(sim.Options{})
	must(t, back.Start(addr))
	t.Cleanup(back.Close)
	grow(10)
	if s = step("server back", time.Minute); s.Server.Metrics != "ok" {
		t.Fatalf("server back: %+v", s.Server)
	}

	grow(1000 - next)
	writeWorkerJSON(t, root, parse.WorkerState{PID: pid, State: parse.WorkerDone, Category: "B2", UpdatedAt: c.now().Add(time.Minute),
		Categories: []parse.CategoryState{
			{Name: "B1", Class: "SHORT", Done: 20, Target: 20, State: parse.CatSkipped},
			{Name: "B2", Class: "LONG", Done: 1000, Target: 1000, State: parse.CatDone, CompletionTokens: 200000},
		}})
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	waitZombie(t, pid)
	s = step("finished", time.Minute)
	s = step("after", time.Minute)
	if s.Worker.State != snapshot.WorkerExited || catByName(t, s, "B2").State != snapshot.StateDone {
		t.Fatalf("finished: worker %+v B2 %+v", s.Worker, catByName(t, s, "B2"))
	}
	for _, k := range []string{"stall_start", "stall_end", "server_down", "server_up", "worker_exited", "category_done", "pipeline_done"} {
		if len(kinds(w.timeline.Recent(500), k)) == 0 {
			t.Errorf("the night never had %s: %+v", k, w.timeline.Recent(500))
		}
	}
}

// projectsOnly projects w's Snapshot twice after a poll that returned s:
// each equals s, and the parts and the timeline are as the poll left them.
func projectsOnly(t *testing.T, w *Watcher, s snapshot.Snapshot, what string) {
	t.Helper()
	before := partsText(w)
	a := w.project()
	b := w.project()
	if got, want := stateText(a), stateText(s); got != want {
		t.Fatalf("%s: the projection is not the poll's snapshot: %s", what, firstDiff(want, got))
	}
	if got, want := stateText(b), stateText(a); got != want {
		t.Fatalf("%s: a second projection differs: %s", what, firstDiff(want, got))
	}
	if after := partsText(w); after != before {
		t.Fatalf("%s: projecting changed the watcher's parts:\n%s", what, firstDiff(before, after))
	}
}

// partsText is everything a poll folds into: each part, and the timeline.
func partsText(w *Watcher) string {
	return stateText(struct {
		cnt   *counts.Set
		sv    *servers.Set
		live  *liveness.Live
		log   *worklog.Log
		ev    *events.Recorder
		vit   *vitals.Health
		base  *events.Baseline
		conn  snapshot.Connection
		polls int
		tl    []snapshot.Event
	}{w.cnt, w.sv, w.live, w.log, w.ev, w.vit, w.base, w.conn, w.polls, w.timeline.Recent(1 << 30)})
}

func waitZombie(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not end: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] { // with the lines before it, which name the field
			return fmt.Sprintf("line %d:\n%s\n- %s\n+ %s", i, strings.Join(al[max(0, i-8):i], "\n"), al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(al), len(bl))
}
