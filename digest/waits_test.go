package digest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/parse"
)

// The worker's waits on a server that did not answer, told by its log
// (which has no times) as the worker writes it: a wait before it took a
// category up (from the run's start), a wait of 6 minutes placed after the
// run's last record before it (the progress line says how many came
// first), a wait the run ended in (a new run's banner follows, no back
// line), and a wait still going (the running run's last, no back line).
// Each has start, end or still, and the records the hour lost.
func TestDigestWorkerWaits(t *testing.T) {
	t.Parallel()
	r := digesttest.NewRoot(t)
	log := func(l string) { r.Add(parse.WorkerLogPath, l) }
	refused := `Get "http://127.0.0.1:30000/health": dial tcp 127.0.0.1:30000: connect: connection refused`
	const runA, runB = "20261202T000000Z-201", "20261202T010000Z-202"

	log(parse.FormatBanner("dev", 201, runA, parse.DefaultServerURL, "chat", 1))
	log(parse.FormatWaiting(parse.DefaultServerURL, refused)) // the server not up yet
	log(parse.FormatBack(parse.DefaultServerURL, 45*time.Second))
	r.Start("A", runA, 201, hm(0, 1))
	log(parse.Separator)
	log(parse.FormatProcessing("A", "SHORT"))
	log(parse.FormatPrompts("A", 100))
	r.Records("A", runA, hm(0, 2), hm(0, 21))
	log(parse.FormatProgress(20, 100, 0, 1, 200, time.Hour, true))
	r.Records("A", runA, hm(0, 22), hm(0, 25)) // after the progress line, before the wait
	log(parse.FormatWaiting(parse.DefaultServerURL, refused))
	log("waiting: 8 requests in flight, oldest 1m0s")
	log(parse.FormatBack(parse.DefaultServerURL, 6*time.Minute))
	r.Records("A", runA, hm(0, 32), hm(0, 40)) // a 7-minute gap: 00:25 → 00:32
	log(parse.FormatProgress(33, 100, 0, 1, 200, time.Hour, true))
	log(parse.FormatWaiting(parse.DefaultServerURL, refused)) // the run ends in it
	r.RunLine("A", parse.RunLine{Run: runA, PID: 201, EndedAt: hm(0, 50).Format(time.RFC3339Nano), End: parse.RunStopped, Cause: "terminated"})

	log(parse.FormatBanner("dev", 202, runB, parse.DefaultServerURL, "chat", 1))
	r.Start("A", runB, 202, hm(1, 0))
	log(parse.FormatProcessing("A", "SHORT"))
	log(parse.FormatResume("A", 100, 33, 67))
	r.Records("A", runB, hm(1, 1), hm(1, 10))
	log(parse.FormatProgress(40, 100, 0, 1, 200, time.Hour, true))
	log(parse.FormatWaiting(parse.DefaultServerURL, "status 503")) // still waiting
	r.WorkerJSON(202, parse.WorkerWaitingServer, "A", hm(1, 30))

	s := digestAt(t, r, hm(1, 30, 20))
	var waits []digest.Incident
	for _, in := range s.Incidents {
		if in.Kind == digest.KindWait {
			waits = append(waits, in)
		}
	}
	type want struct {
		from, end time.Time // end zero: still
		text      string
	}
	wants := []want{
		{time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), hm(0, 0, 45), "back after 45s; placed at the run's start, before any category"},
		{hm(0, 25), hm(0, 31), "back after 6m; placed after its last record on A, 00:25:00"},
		{hm(0, 40), hm(0, 50), "until its run ended (stopped by a signal someone else sent)"},
		{hm(1, 10), time.Time{}, "the worker is waiting on the server (status 503)"},
	}
	if len(waits) != len(wants) {
		for _, w := range waits {
			t.Logf("%s %+v", w.Time, w)
		}
		t.Fatalf("%d waits, want %d", len(waits), len(wants))
	}
	for i, w := range wants {
		got := waits[i]
		if !got.Time.Equal(w.from) || !strings.Contains(got.Text, w.text) || !strings.Contains(got.Text, "(its log has no times)") {
			t.Errorf("wait %d: %s %q, want from %s with %q", i, got.Time, got.Text, w.from, w.text)
		}
		switch {
		case w.end.IsZero() && !got.Still:
			t.Errorf("wait %d: not still: %+v", i, got)
		case !w.end.IsZero() && (got.End == nil || !got.End.Equal(w.end)):
			t.Errorf("wait %d: end %v, want %s", i, got.End, w.end)
		}
	}
	// the hour around the 6-minute wait fell short of the job's rate over
	// the window (0.62 a minute, its gaps included): 3 records
	if l := waits[1].Lost; l == nil || *l != 3 {
		t.Errorf("the 6-minute wait lost %v records, want 3", fmtLost(l))
	}
}

func fmtLost(l *int64) any {
	if l == nil {
		return "no"
	}
	return *l
}

// The server that takes the worker's requests and answers none: the
// worker's heartbeat ("waiting: N requests in flight, oldest D") opens a
// spell that the next progress line closes; it is placed from the run's
// last record before it to its next one, and one still going is still.
// The stalls the spells explain are not listed twice.
func TestDigestUnansweredRequests(t *testing.T) {
	t.Parallel()
	r := digesttest.NewRoot(t)
	log := func(l string) { r.Add(parse.WorkerLogPath, l) }
	const run = "20261202T000000Z-301"
	log(parse.FormatBanner("dev", 301, run, parse.DefaultServerURL, "chat", 1))
	r.Start("H", run, 301, hm(0, 0))
	log(parse.FormatProcessing("H", "LONG"))
	log(parse.FormatPrompts("H", 100))
	r.Records("H", run, hm(0, 1), hm(0, 10))
	log(parse.FormatProgress(10, 100, 0, 1, 200, time.Hour, true))
	for m := 1; m <= 14; m++ {
		log(parse.FormatHeartbeat(16, time.Duration(m)*time.Minute))
	}
	log(parse.FormatProgress(11, 100, 0, 1, 200, time.Hour, true))
	r.Records("H", run, hm(0, 25), hm(0, 30))
	log(parse.FormatProgress(16, 100, 0, 1, 200, time.Hour, true))
	for m := 1; m <= 19; m++ {
		log(parse.FormatHeartbeat(16, time.Duration(m)*time.Minute))
	}
	r.WorkerJSON(301, parse.WorkerRunning, "H", hm(0, 50))

	s := digestAt(t, r, hm(0, 50, 10))
	var waits []digest.Incident
	for _, in := range s.Incidents {
		switch in.Kind {
		case digest.KindWait:
			waits = append(waits, in)
		case digest.KindStall:
			t.Errorf("a stall the unanswered requests explain: %+v", in)
		}
	}
	if len(waits) != 2 {
		t.Fatalf("waits %+v, want two", waits)
	}
	if w := waits[0]; !w.Time.Equal(hm(0, 10)) || w.End == nil || !w.End.Equal(hm(0, 25)) ||
		!strings.Contains(w.Text, "answered none of the worker's 16 requests in flight (the oldest 14m old") {
		t.Errorf("the first spell: %+v, want 00:10 → 00:25", w)
	}
	if w := waits[1]; !w.Time.Equal(hm(0, 30)) || !w.Still || !strings.Contains(w.Text, "the oldest 19m old") {
		t.Errorf("the spell still going: %+v, want from 00:30, still", w)
	}
}
