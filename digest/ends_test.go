package digest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/parse"
)

// root is a pipeline root written line by line as the worker, the kill
// action and SGLang write their files.
type root struct {
	t   *testing.T
	dir string
}

func newRoot(t *testing.T) root {
	r := root{t, t.TempDir()}
	if err := os.MkdirAll(filepath.Join(r.dir, parse.PreparedDir), 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r root) add(rel, line string) {
	p := filepath.Join(r.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		r.t.Fatal(err)
	}
}

func (r root) runLine(cat string, l parse.RunLine) {
	b, _ := json.Marshal(l)
	r.add(parse.PreparedDir+"/"+cat+"/"+parse.RunsFile, string(b))
}

func (r root) start(cat, run string, pid int, at time.Time) {
	r.runLine(cat, parse.RunLine{Run: run, PID: pid, StartedAt: at.Format(time.RFC3339Nano)})
}

// records writes one record a minute from..to (inclusive) of run in cat.
func (r root) records(cat, run string, from, to time.Time) {
	for t := from; !t.After(to); t = t.Add(time.Minute) {
		r.add(parse.PreparedDir+"/"+cat+"/"+parse.RawFile, fmt.Sprintf(`{"id":%q,"run":%q,"completion_tokens":100,"finished_at":%q}`,
			run+t.Format("1504"), run, t.Format(time.RFC3339Nano)))
	}
}

func (r root) workerJSON(pid int, state, cat string, updated time.Time) {
	b, _ := json.Marshal(parse.WorkerState{Schema: 1, PID: pid, State: state, Category: cat, Server: parse.DefaultServerURL, UpdatedAt: updated})
	p := filepath.Join(r.dir, filepath.FromSlash(parse.WorkerStatePath))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r root) server(at time.Time, msg string) {
	r.add(parse.ServerLogPath, "["+at.Format("2006-01-02 15:04:05")+"] "+msg)
}

func (r root) digest(now time.Time) *digest.Summary {
	s, err := digest.Build(digest.Options{Root: r.dir, Since: now.Add(-3 * time.Hour), Now: now, Loc: time.UTC})
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func hm(h, m int) time.Time { return time.Date(2026, 12, 2, h, m, 0, 0, time.UTC) }

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
	r := newRoot(t)
	r.start("A", "a", 101, hm(0, 10))
	r.records("A", "a", hm(0, 11), hm(0, 40))
	r.runLine("A", parse.RunLine{Run: "a", PID: 101, EndedAt: hm(0, 41).Format(time.RFC3339Nano), End: parse.RunStopped, Cause: "terminated signal received"})
	r.start("A", "b", 102, hm(0, 45))
	r.records("A", "b", hm(0, 46), hm(1, 0))
	r.add(parse.WorkerLogPath, parse.FormatKill(102, 45*time.Second))
	r.start("A", "c", 103, hm(1, 5))
	r.records("A", "c", hm(1, 6), hm(1, 30))
	r.start("B", "c", 103, hm(1, 31)) // B hangs: no record at all
	r.workerJSON(103, parse.WorkerRunning, "B", hm(1, 50))
	r.server(hm(0, 5), "The server is fired up and ready to roll!")
	for m := 6; m <= 58; m += 2 {
		r.server(hm(0, m), "Decode batch, #running-req: 8, #token: 9000, token usage: 0.10, cuda graph: True, gen throughput (token/s): 400.00, #queue-req: 0")
	}
	r.server(hm(1, 2), "Load weight begin. avail mem=79.00 GB")
	r.server(hm(1, 4), "The server is fired up and ready to roll!")

	s := r.digest(hm(3, 0))
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
	q := newRoot(t)
	q.start("A", "d", 201, hm(1, 0))
	q.records("A", "d", hm(1, 1), hm(1, 20))
	q.workerJSON(201, parse.WorkerRunning, "A", hm(2, 59))
	s := q.digest(hm(3, 0))
	st := incident(s, digest.KindStall, hm(1, 20))
	if st == nil || !st.Still || st.End != nil || st.Span(s.Now) != 100*time.Minute || !strings.Contains(st.Text, "still on it") {
		t.Errorf("the stall still going: %+v in %+v", st, s.Incidents)
	}

	r := newRoot(t)
	r.start("A", "d", 201, hm(1, 0))
	r.records("A", "d", hm(1, 1), hm(1, 20))
	r.workerJSON(201, parse.WorkerWaitingServer, "A", hm(2, 59))
	r.server(hm(0, 55), "The server is fired up and ready to roll!")
	r.server(hm(1, 21), "Scheduler hit an exception: Traceback (most recent call last):")
	r.add(parse.ServerLogPath, "RuntimeError: CUDA out of memory.")
	r.server(hm(1, 21), "SIGQUIT received. signum=None, frame=None. It usually means one child failed.")

	s = r.digest(hm(3, 0))
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
