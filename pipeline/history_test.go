package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
)

// dayOldRoot is a finished job from yesterday, in a host zone of UTC+05:30:
// the SGLang log (the testdata fixture, its date moved to yesterday) has a
// ready, a crash at 14:08 and a ready again; the worker log (no
// timestamps) ends with "All categories finished."; B1 is done.
func dayOldRoot(t *testing.T, zone *time.Location) (root string, day time.Time) {
	t.Helper()
	root = t.TempDir()
	y := time.Now().In(zone).AddDate(0, 0, -1)
	day = time.Date(y.Year(), y.Month(), y.Day(), 0, 0, 0, 0, zone)
	fixture, err := os.ReadFile("../testdata/logs/sglang_mixed.log")
	must(t, err)
	log := strings.ReplaceAll(string(fixture), "2026-02-03", day.Format("2006-01-02"))
	log += "[" + day.Format("2006-01-02") + " 14:12:00] The server is fired up and ready to roll!\n"
	slog := filepath.Join(root, parse.ServerLogPath)
	write(t, slog, log)
	wlog := filepath.Join(root, parse.WorkerLogPath)
	write(t, wlog, "Processing: B1 (SHORT)\nB1: 20 prompts\n20/20 (0 err) 2.0 req/s avg_comp=200tok ETA=0s\nAll categories finished.\n")
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 20))
	raw := filepath.Join(root, "prepared", "B1", "raw_responses.jsonl")
	write(t, raw, records("B1", 0, 20))
	done := day.Add(14*time.Hour + 30*time.Minute)
	must(t, os.Chtimes(raw, done, done))
	must(t, os.Chtimes(wlog, done.Add(time.Second), done.Add(time.Second)))
	must(t, os.Chtimes(slog, day.Add(14*time.Hour+12*time.Minute), day.Add(14*time.Hour+12*time.Minute)))
	return root, day
}

// A day-old log replayed twice, by two watchers (two sessions) sharing one
// history file: the events carry the log's own times in the host's zone
// (learnt from the host: TZ is the host's here), the last crash time is
// the crash's, and the history holds each event once.
func TestReplayedDayOldLogKeepsItsTimesOnce(t *testing.T) {
	t.Setenv("TZ", "IST-5:30") // what `date +%z` on the host prints: +0530
	zone := time.FixedZone("", 5*3600+30*60)
	root, day := dayOldRoot(t, zone)
	hist := filepath.Join(t.TempDir(), "state", "h.jsonl")
	crashAt := day.Add(14*time.Hour + 8*time.Minute)
	url := closedURL(t)
	for session := 0; session < 2; session++ {
		w := NewWatcher(remote.Local{}, Options{Host: "local", Root: root, ServerURL: url}, timeline.New(500, hist))
		s := poll(w)
		s = poll(w)
		if _, off := time.Now().In(w.ev.HostZone()).Zone(); off != 5*3600+30*60 {
			t.Fatalf("session %d: host zone offset %d", session, off)
		}
		if s.Server.LastCrashAt == nil || !s.Server.LastCrashAt.Equal(crashAt) {
			t.Fatalf("session %d: last crash at %v, want %v", session, s.Server.LastCrashAt, crashAt)
		}
	}
	evs := timeline.New(500, hist).Recent(500)
	want := []struct {
		kind string
		at   time.Time
	}{
		{"server_ready", day.Add(14*time.Hour + 6*time.Minute + 35*time.Second)},
		{"server_crash", crashAt},
		{"server_ready", day.Add(14*time.Hour + 12*time.Minute)},
		{"category_done", day.Add(14*time.Hour + 30*time.Minute)},
		{"pipeline_done", day.Add(14*time.Hour + 30*time.Minute)},
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Kind+" "+e.Time.In(zone).Format("01-02 15:04:05"))
	}
	if len(evs) != len(want) {
		t.Fatalf("history holds %d events, want %d:\n%s", len(evs), len(want), strings.Join(got, "\n"))
	}
	for i, wnt := range want {
		if evs[i].Kind != wnt.kind || !evs[i].Time.Equal(wnt.at) {
			t.Errorf("event %d: %s, want %s %s", i, got[i], wnt.kind, wnt.at.Format("01-02 15:04:05"))
		}
	}
	if e := evs[3]; e.Category != "B1" || e.Class != "SHORT" || !strings.Contains(e.Text, "B1 done: 20 records") {
		t.Errorf("category_done %+v", e)
	}
	data, err := os.ReadFile(hist)
	must(t, err)
	if n := strings.Count(string(data), "\n"); n != len(want) {
		t.Errorf("the history file has %d lines, want %d:\n%s", n, len(want), data)
	}
}

// A real run over a real sshd: launch, kill (by us), resume to the end. The
// timeline says each start and exit (how it ended), each category done with
// its class and rate, and the pipeline done, once; a new session on the
// same history adds no second category_done or pipeline_done.
func TestEndToEndDoneAndWorkerEvents(t *testing.T) {
	testgate.E2E(t)
	e := newE2E(t, map[string]int{"B1": 200, "B2": 160}, 20) // B2 spans polls: its rate is measured
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	tl := timeline.New(500, hist)
	e.w = NewWatcher(e.h, Options{Host: "e2e", Root: e.root, ServerURL: e.sim.URL()}, tl)
	ctx := t.Context()
	e.w.Poll(ctx) // the baseline: nothing runs
	first, err := e.act.Launch(ctx, nil)
	must(t, err)
	e.until("B1 runs", 30*time.Second, func(s snapshot.Snapshot) bool { return s.Worker.PID == first && catByName(t, s, "B1").Done >= 20 })
	if _, err := e.act.Kill(ctx, first, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	e.until("stopped", 15*time.Second, func(s snapshot.Snapshot) bool { return !snapshot.Alive(s.Worker.State) })
	second, err := e.act.Launch(ctx, nil)
	must(t, err)
	count := func(evs []snapshot.Event, kind, text string) (n int) {
		for _, ev := range evs {
			if ev.Kind == kind && strings.Contains(ev.Text, text) {
				n++
			}
		}
		return n
	}
	// the worker's exit and the last category's count may come a poll apart
	s := e.until("all done", 90*time.Second, func(s snapshot.Snapshot) bool {
		return s.Worker.State == snapshot.WorkerExited && count(s.Events, "pipeline_done", "") > 0
	})
	var lines []string
	for _, ev := range s.Events {
		lines = append(lines, ev.Time.Format("15:04:05.000")+" "+ev.Kind+" "+ev.Text)
	}
	dump := strings.Join(lines, "\n")
	t.Logf("timeline:\n%s", dump)
	for _, c := range []struct {
		kind, text string
	}{
		{"worker_started", fmt.Sprintf("pid %d", first)},
		{"worker_exited", fmt.Sprintf("worker pid %d stopped by you", first)},
		{"worker_started", fmt.Sprintf("pid %d", second)},
		{"worker_exited", fmt.Sprintf("worker pid %d exited", second)},
		{"category_done", "B1 done: 200 records"},
		{"category_done", "B2 done: 160 records"},
		{"pipeline_done", "pipeline done: 360 records"},
	} {
		if n := count(s.Events, c.kind, c.text); n != 1 {
			t.Errorf("%d × %s %q, want 1:\n%s", n, c.kind, c.text, dump)
		}
	}
	for _, ev := range s.Events {
		if ev.Kind == "category_done" && (ev.Class != "SHORT" || ev.RatePerMin <= 0) {
			t.Errorf("category_done without its class and rate: %+v", ev)
		}
		if ev.Kind == "server_crash" || ev.Kind == "worker_exited" && strings.Contains(ev.Text, "died") {
			t.Errorf("a crash in a clean run: %+v", ev)
		}
	}
	// the next session, on the same history: the job is found done, nothing new
	again := NewWatcher(e.h, Options{Host: "e2e", Root: e.root, ServerURL: e.sim.URL()}, timeline.New(500, hist))
	s = again.Poll(ctx)
	s = again.Poll(ctx)
	if n := count(s.Events, "category_done", ""); n != 2 {
		t.Errorf("%d category_done after a new session, want 2", n)
	}
	if n := count(s.Events, "pipeline_done", ""); n != 1 {
		t.Errorf("%d pipeline_done after a new session, want 1", n)
	}
}

// The first connection of a session is no reconnection; a drop with no
// reason reads as a drop, not "…host: ".
func TestFirstConnectionIsNoReconnect(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, _ := runningRoot(t, c)
	h := &linkedHost{Host: remote.Local{}, st: remote.ConnState{Phase: remote.Connecting}}
	w := NewWatcher(h, Options{Root: root, Now: c.now, ServerURL: closedURL(t)}, nil)
	poll(w)
	h.st = remote.ConnState{Phase: remote.Connected}
	c.advance(time.Second)
	s := poll(w)
	for _, e := range s.Events {
		if e.Kind == "reconnect" || e.Kind == "disconnect" {
			t.Fatalf("first connection: %+v", s.Events)
		}
	}
	h.st = remote.ConnState{Phase: remote.Reconnecting, Drops: 1}
	c.advance(time.Second)
	poll(w)
	h.st = remote.ConnState{Phase: remote.Connected, Drops: 1}
	c.advance(time.Second)
	s = poll(w)
	var got []string
	for _, e := range s.Events {
		if e.Kind == "reconnect" || e.Kind == "disconnect" {
			got = append(got, e.Kind+": "+e.Text)
		}
	}
	if strings.Join(got, "\n") != "disconnect: lost the link to the host\nreconnect: connected again" {
		t.Fatalf("events %q", got)
	}
}
