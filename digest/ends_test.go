package digest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/parse"
)

func digestAt(t *testing.T, r digesttest.Root, now time.Time) *digest.Summary {
	s, err := digest.Build(digest.Options{Root: r.Dir, Since: now.Add(-3 * time.Hour), Now: now, Loc: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hm(h, m int, sec ...int) time.Time {
	return time.Date(2026, 12, 2, h, m, append(sec, 0)[0], 0, time.UTC)
}

func incident(s *digest.Summary, kind string, at time.Time) *digest.Incident {
	for i, in := range s.Incidents {
		if in.Kind == kind && in.Time.Equal(at) {
			return &s.Incidents[i]
		}
	}
	return nil
}

// Every run ends with a reason: a stop by a signal someone else sent (its
// end line, no kill mark), a stop by synthwatch's kill (its mark, no end
// line: killed after the grace), a death (worker.json stale, the process
// gone); a category that hung with no record while a run was on it is a
// stall with its length; a server that died without a word is an outage
// from its last sign of life to its ready line.
func TestDigestRunEndsAndIncidents(t *testing.T) {
	t.Parallel()
	r := digesttest.EndsNight(t)
	s := digestAt(t, r, hm(3, 0))
	ends := map[string]digest.Run{}
	for _, run := range s.Runs {
		ends[run.ID] = run
	}
	for id, want := range map[string]string{"a": digest.EndSignal, "b": digest.EndByYou, "c": digest.EndDied} {
		if got := ends[id]; got.End != want {
			t.Errorf("run %s: %q (%s), want %q", id, got.End, got.EndHow, want)
		}
	}
	if a := ends["a"]; a.EndHow != "its end line" || a.EndCause != "terminated signal received" || !a.EndAt.Equal(hm(0, 41)) {
		t.Errorf("run a: %+v", a)
	}
	if b := ends["b"]; !strings.HasPrefix(b.EndHow, "inferred") || !b.EndAt.Equal(hm(1, 0)) {
		t.Errorf("run b: %+v", b)
	}
	if c := ends["c"]; !strings.HasPrefix(c.EndHow, "inferred") || !strings.Contains(c.EndHow, "01:50:00") || !c.EndAt.Equal(hm(1, 50)) {
		t.Errorf("run c: %+v", c)
	}
	if st := incident(s, digest.KindStall, hm(1, 31)); st == nil || st.Category != "B" || st.End == nil || !st.End.Equal(hm(1, 50)) {
		t.Errorf("B's zero-record hang: %+v in %+v", st, s.Incidents)
	} else if st.Lost == nil || *st.Lost < 15 {
		t.Errorf("B's hang lost %v records; a category with no rate of its own is held to the job's (1 a minute)", st.Lost)
	}
	if out := incident(s, digest.KindOutage, hm(0, 58)); out == nil || out.End == nil || !out.End.Equal(hm(1, 4)) || !strings.Contains(out.Text, "no crash logged") {
		t.Errorf("the silent outage: %+v in %+v", out, s.Incidents)
	}
	n := 0
	for _, in := range s.Incidents {
		if in.Kind == digest.KindRunEnd {
			n++
		}
		if in.Kind == digest.KindStall && in.Category == "A" {
			t.Errorf("a stall in A, which had a record every minute of each run: %+v", in)
		}
	}
	if n != 3 {
		t.Errorf("%d run ends, want 3: %+v", n, s.Incidents)
	}
}

// A run alive on a category with no records for long is a stall still
// going; a worker waiting on the server is a wait still going; a crash with
// no ready line after it is an outage still going, listed once, and the
// stall it explains is not listed again.
func TestDigestStillGoing(t *testing.T) {
	t.Parallel()
	q := digesttest.NewRoot(t)
	q.Start("A", "d", 201, hm(1, 0))
	q.Records("A", "d", hm(1, 1), hm(1, 20))
	q.WorkerJSON(201, parse.WorkerRunning, "A", hm(2, 59))
	s := digestAt(t, q, hm(3, 0))
	st := incident(s, digest.KindStall, hm(1, 20))
	if st == nil || !st.Still || st.End != nil || st.Span(s.Now) != 100*time.Minute || !strings.Contains(st.Text, "still on it") {
		t.Errorf("the stall still going: %+v in %+v", st, s.Incidents)
	}

	r := digesttest.NewRoot(t)
	r.Start("A", "d", 201, hm(1, 0))
	r.Records("A", "d", hm(1, 1), hm(1, 20))
	r.WorkerJSON(201, parse.WorkerWaitingServer, "A", hm(2, 59))
	r.Server(hm(0, 55), "The server is fired up and ready to roll!")
	r.Server(hm(1, 21), "Scheduler hit an exception: Traceback (most recent call last):")
	r.Add(parse.ServerLogPath, "RuntimeError: CUDA out of memory.")
	r.Server(hm(1, 21), "SIGQUIT received. signum=None, frame=None. It usually means one child failed.")

	s = digestAt(t, r, hm(3, 0))
	if st := incident(s, digest.KindStall, hm(1, 20)); st != nil {
		t.Errorf("a stall the outage explains: %+v", st)
	}
	if w := incident(s, digest.KindWait, hm(1, 20)); w == nil || !w.Still {
		t.Errorf("the wait: %+v in %+v", w, s.Incidents)
	}
	outages := 0
	for _, in := range s.Incidents {
		if in.Kind == digest.KindOutage {
			outages++
			if !in.Still || !in.Time.Equal(hm(1, 21)) || !strings.Contains(in.Text, "out of memory") {
				t.Errorf("the outage: %+v", in)
			}
		}
	}
	if outages != 1 || s.Server.Crashes != 1 {
		t.Errorf("%d outages, %d crashes, want the crash once: %+v", outages, s.Server.Crashes, s.Incidents)
	}
}

// A worker killed -9 a moment ago leaves a fresh worker.json that says
// running: the host's process table says it died. The test's own pid is a
// live worker; a child that ran and was reaped is a dead one.
func TestDigestFreshWorkerJSONOfAGoneProcess(t *testing.T) {
	t.Parallel()
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pid  int
		want string
	}{{os.Getpid(), digest.EndRunning}, {child.Process.Pid, digest.EndDied}} {
		r := digesttest.NewRoot(t)
		r.Start("A", "e", tc.pid, hm(2, 0))
		r.Records("A", "e", hm(2, 1), hm(2, 58))
		r.WorkerJSON(tc.pid, parse.WorkerRunning, "A", hm(2, 59, 50))
		s, err := digest.Build(digest.Options{Root: r.Dir, Since: hm(0, 0), Now: hm(3, 0), Loc: time.UTC, Alive: digest.ProcAlive})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Runs) != 1 || s.Runs[0].End != tc.want {
			t.Errorf("pid %d: %+v, want %s", tc.pid, s.Runs, tc.want)
		}
	}
}

// The old Python script writes no runs.jsonl: its hang is read from the
// worker log's last "Processing:" line, from the last record before it to
// the log's last write (its time-outs), and said to be inferred.
func TestDigestScriptHang(t *testing.T) {
	t.Parallel()
	r := digesttest.NewRoot(t)
	for m := 0; m < 30; m++ { // json.dumps spacing, time.time() in "timestamp"
		r.Add("prepared/B2/raw_responses.jsonl", fmt.Sprintf(`{"id": "b2-%d", "usage": {"completion_tokens": 90}, "timestamp": %d.25}`, m, hm(1, 30+m).Unix()))
	}
	r.Add("prepared/B3/prompts.jsonl", `{"id": "b3-0", "messages": []}`)
	for _, l := range []string{parse.FormatProcessing("B2", "SHORT"), parse.FormatPrompts("B2", 30), parse.Separator,
		parse.FormatProcessing("B3", "LONG"), "ERROR: b3-0: Request timed out."} {
		r.Add(parse.WorkerLogPath, l)
	}
	logPath := filepath.Join(r.Dir, filepath.FromSlash(parse.WorkerLogPath))
	if err := os.Chtimes(logPath, hm(2, 20), hm(2, 20)); err != nil {
		t.Fatal(err)
	}
	s := digestAt(t, r, hm(3, 0))
	st := incident(s, digest.KindStall, hm(1, 59).Add(250*time.Millisecond))
	if st == nil || st.Category != "B3" || st.End == nil || !st.End.Equal(hm(2, 20)) || st.Still || !strings.Contains(st.Text, "inferred") {
		t.Errorf("B3's hang: %+v in %+v", st, s.Incidents)
	}
	// the script still writing a minute ago: the hang goes on
	if err := os.Chtimes(logPath, hm(2, 59, 30), hm(2, 59, 30)); err != nil {
		t.Fatal(err)
	}
	s = digestAt(t, r, hm(3, 0))
	if st := incident(s, digest.KindStall, hm(1, 59).Add(250*time.Millisecond)); st == nil || !st.Still {
		t.Errorf("B3's hang still going: %+v in %+v", st, s.Incidents)
	}
}
