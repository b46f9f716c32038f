package digest_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/parse"
)

func writeFile(t *testing.T, p, s string, at time.Time) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, at, at)
}

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(f(i) + "\n")
	}
	return b.String()
}

func pyRecord(cat string, at time.Time) func(int) string {
	return func(i int) string {
		return fmt.Sprintf(`{"id": "%s-%d", "response": "a", "usage": {"completion_tokens": 100}, "timestamp": %.3f}`, cat, i, float64(at.Add(time.Duration(i)*4*time.Second).UnixNano())/1e9)
	}
}

func catOf(t *testing.T, s *digest.Summary, name string) digest.Category {
	t.Helper()
	for _, c := range s.Categories {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s in %+v", name, s.Categories)
	return digest.Category{}
}

// holder starts a process that holds path open for appending, as the old
// script holds its category's file, and ends it with the test.
func holder(t *testing.T, path string) int {
	t.Helper()
	c := exec.Command("sh", "-c", `exec 3>>"$1"; while :; do sleep 1; done`, "sh", path)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	t.Cleanup(func() { syscall.Kill(-c.Process.Pid, syscall.SIGKILL); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pids, _ := digest.ProcWriters(path); len(pids[path]) > 0 || time.Now().After(deadline) {
			return c.Process.Pid
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The report judges each category as status does (parse.JudgeCategory):
// the buffered relaunch (an empty log, a live process appending to B2) is
// running, its run too; B1, whose prompts grew after the worker read them,
// has a target of 40, not the worker's 20, and work left; B3's old log
// figure (7 prompts, its --max-samples) is a note beside the prompts' 10; a category nobody
// works on has no ETA, whatever its window's rate. The relaunch's B2 has
// one: no worker.json, an empty log, but its records' own times (a record
// every 4 s: 15/min, 70 left) witness its rate (parse.WitnessedRate), as
// status says.
func TestReportJudgesCategoriesAsStatus(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	started := now.Add(-2 * time.Hour)
	p := func(cat, f string) string { return filepath.Join(root, "prepared", cat, f) }
	writeFile(t, p("B1", "prompts.jsonl"), lines(40, func(i int) string { return fmt.Sprintf(`{"id": "B1-%d"}`, i) }), now.Add(-time.Hour))
	writeFile(t, p("B1", "raw_responses.jsonl"), lines(20, pyRecord("B1", started)), started.Add(time.Minute))
	writeFile(t, p("B2", "prompts.jsonl"), lines(100, func(i int) string { return fmt.Sprintf(`{"id": "B2-%d"}`, i) }), started)
	writeFile(t, p("B2", "raw_responses.jsonl"), lines(30, pyRecord("B2", now.Add(-2*time.Minute))), now)
	writeFile(t, p("B3", "prompts.jsonl"), lines(10, func(i int) string { return fmt.Sprintf(`{"id": "B3-%d"}`, i) }), started)
	writeFile(t, p("B3", "raw_responses.jsonl"), lines(5, pyRecord("B3", now.Add(-time.Hour))), now.Add(-time.Hour))
	writeFile(t, filepath.Join(root, "logs", "inference_all.log"), "", now.Add(-5*time.Minute)) // > log, stdout buffered
	pid := holder(t, p("B2", "raw_responses.jsonl"))

	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-3 * time.Hour), Now: now, Alive: digest.ProcAlive, Writers: digest.ProcWriters})
	if err != nil {
		t.Fatal(err)
	}
	if b2 := catOf(t, s, "B2"); b2.State != parse.CatRunning || b2.Left() != 70 || b2.ETASec == nil || math.Abs(*b2.ETASec-280) > 1 {
		t.Errorf("B2, written by pid %d: %+v", pid, b2)
	}
	if b3 := catOf(t, s, "B3"); b3.State != parse.JudgedPartial || b3.ETASec != nil || b3.Target != 10 {
		t.Errorf("B3, nobody on it: %+v", b3)
	}
	var ends []string
	for _, r := range s.Runs {
		ends = append(ends, r.End+": "+r.EndHow)
	}
	if len(s.Runs) != 1 || s.Runs[0].End != digest.EndRunning || !strings.Contains(s.Runs[0].EndHow, "B2's raw_responses.jsonl") {
		t.Errorf("runs %q", ends)
	}

	// the Go worker read B1's 20 prompts and finished; 20 more were appended since
	ws := parse.WorkerState{Schema: 1, PID: 999999, State: parse.WorkerDone, StartedAt: started, UpdatedAt: started.Add(time.Minute),
		Categories: []parse.CategoryState{{Name: "B1", Class: "SHORT", Target: 20, Done: 20, State: parse.CatDone}}}
	b, _ := json.Marshal(ws)
	writeFile(t, filepath.Join(root, "logs", "inference_all.log"), "Processing: B3 (SHORT)\nB3: 7 prompts\n", now.Add(-time.Hour)) // the old script's --max-samples 7
	writeFile(t, filepath.Join(root, "run", "worker.json"), string(b), started.Add(time.Minute))
	s, err = digest.Build(digest.Options{Root: root, Since: now.Add(-3 * time.Hour), Now: now, Alive: digest.ProcAlive, Writers: digest.ProcWriters})
	if err != nil {
		t.Fatal(err)
	}
	if b3 := catOf(t, s, "B3"); b3.Target != 10 || !strings.HasPrefix(b3.TargetNote, "the worker log says 7 prompts; the target is 10") {
		t.Errorf("B3 with the log's 7 prompts: %+v", b3)
	}
	if b1 := catOf(t, s, "B1"); b1.Target != 40 || b1.TargetSource != parse.TargetPrompts || b1.State != parse.JudgedPartial || b1.Left() != 20 {
		t.Errorf("B1 with 20 prompts appended after its worker read 20: %+v", b1)
	}
}

// Records written after a logged crash end the outage at the first of
// them (inferred): the server came back with its log elsewhere. Before,
// the report listed "14:10 → still" over 250 records.
func TestRecordsAfterACrashEndTheOutage(t *testing.T) {
	loc := time.UTC
	now := time.Date(2026, 11, 29, 19, 0, 0, 0, loc)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "logs", "sglang_inference.log"),
		"[2026-11-29 13:00:00] The server is fired up and ready to roll!\n"+
			"[2026-11-29 14:10:00] Subprocess scheduler_0 (pid=7391) crashed with exit code -6. Triggering SIGQUIT for cleanup...\n", now)
	p := filepath.Join(root, "prepared", "A")
	writeFile(t, filepath.Join(p, "prompts.jsonl"), lines(300, func(i int) string { return fmt.Sprintf(`{"id": "A-%d"}`, i) }), now)
	back := time.Date(2026, 11, 29, 14, 40, 0, 0, loc)
	writeFile(t, filepath.Join(p, "raw_responses.jsonl"), lines(250, func(i int) string {
		return fmt.Sprintf(`{"id": "A-%d", "usage": {"completion_tokens": 10}, "finished_at": %q}`, i, back.Add(time.Duration(i)*time.Minute).Format(time.RFC3339))
	}), now)
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-8 * time.Hour), Now: now, Loc: loc})
	if err != nil {
		t.Fatal(err)
	}
	var outs []digest.Incident
	for _, in := range s.Incidents {
		if in.Kind == digest.KindOutage {
			outs = append(outs, in)
		}
	}
	if len(outs) != 1 || outs[0].Still || outs[0].End == nil || !outs[0].End.Equal(back) || !strings.Contains(outs[0].Text, "250 records written after it") ||
		!strings.Contains(outs[0].Text, "(inferred)") {
		t.Fatalf("outages %+v", outs)
	}
}

// The old script's hang, judged by the report as status judges it
// (parse.BecameCurrent, parse.StallLimit, parse.CategoryErrors): B3 became
// current after B2's last record an hour ago, though its own file is
// three hours old; the two time-outs logged since are its errors; a rate
// comes only from a witness a first look has (B2's old progress line is
// B2's). Before, the report timed the stall from B3's file (3h) with no
// errors, and took --stall's 10m whatever stall_after said.
func TestReportStallAsStatus(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	p := func(cat, f string) string { return filepath.Join(root, "prepared", cat, f) }
	writeFile(t, p("B2", "prompts.jsonl"), lines(20, func(i int) string { return fmt.Sprintf(`{"id": "B2-%d"}`, i) }), now.Add(-3*time.Hour))
	writeFile(t, p("B2", "raw_responses.jsonl"), lines(20, pyRecord("B2", now.Add(-time.Hour-2*time.Minute))), now.Add(-time.Hour))
	writeFile(t, p("B3", "prompts.jsonl"), lines(30, func(i int) string { return fmt.Sprintf(`{"id": "B3-%d"}`, i) }), now.Add(-3*time.Hour))
	writeFile(t, p("B3", "raw_responses.jsonl"), "", now.Add(-3*time.Hour))
	tb := "Traceback (most recent call last):\n  File \"/opt/run_inference.py\", line 88, in call\n    resp = urllib.request.urlopen(req, timeout=600)\nTimeoutError: timed out\n"
	writeFile(t, filepath.Join(root, "logs", "inference_all.log"), "Processing: B2 (SHORT)\nRunning 20 requests (concurrency=8, max_tokens=2048)...\n"+
		"10/20 (0 err) 1.1 req/s avg_comp=236tok ETA=0.2m\n"+
		"Processing: B3 (SHORT)\nRunning 30 requests (concurrency=8, max_tokens=2048)...\n"+
		"Processing: B3 (SHORT)\nRunning 30 requests (concurrency=8, max_tokens=2048)...\n"+tb+tb, now) // restarted on B3: B2 is still the one before
	holder(t, p("B3", "raw_responses.jsonl"))
	o := digest.Options{Root: root, Since: now.Add(-3 * time.Hour), Now: now, Alive: digest.ProcAlive, Writers: digest.ProcWriters, Started: digest.ProcStarted}
	s, err := digest.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if b3 := catOf(t, s, "B3"); b3.State != parse.JudgedStalled || b3.Reason != "no new records for 1h00m, 2 errors" || b3.ETASec != nil {
		t.Errorf("B3 hung an hour: %+v", b3)
	}
	// a limit of 2h (stall_after): quiet for an hour is running, with no
	// rate witnessed, so no ETA
	o.StallAfter = 2 * time.Hour
	if s, err = digest.Build(o); err != nil {
		t.Fatal(err)
	}
	if b3 := catOf(t, s, "B3"); b3.State != parse.CatRunning || b3.ETASec != nil {
		t.Errorf("B3 within a 2h limit: %+v", b3)
	}
}

// DONE in the report is status's (parse.JudgeDone): worker.json's extra
// lines measured at its scan make 52 lines with 2 duplicate ids 50
// unique records, and so not over max_samples 50; a file no worker read
// is its records, its blank and bad lines aside.
func TestReportDoneIsUniqueRecords(t *testing.T) {
	t.Parallel()
	root, now := t.TempDir(), time.Now()
	at := now.Add(-2 * time.Hour)
	dup := func(i int) string { return pyRecord("A", at)(i % 50) } // lines 50, 51 repeat ids 0, 1
	writeFile(t, filepath.Join(root, "prepared/A/prompts.jsonl"), lines(60, func(i int) string { return fmt.Sprintf(`{"id": "A-%d"}`, i) }), at)
	writeFile(t, filepath.Join(root, "prepared/A/raw_responses.jsonl"), lines(52, dup), at)
	writeFile(t, filepath.Join(root, "prepared/B/prompts.jsonl"), lines(50, func(i int) string { return fmt.Sprintf(`{"id": "B-%d"}`, i) }), at)
	writeFile(t, filepath.Join(root, "prepared/B/raw_responses.jsonl"), lines(40, pyRecord("B", at))+"\n{torn\n", at)
	writeFile(t, filepath.Join(root, "pipeline.toml"), "[[categories]]\nname = \"A\"\nmax_samples = 50\n", at)
	n, extra := int64(52), int64(2)
	ws, _ := json.Marshal(parse.WorkerState{PID: 1 << 22, State: parse.WorkerStopped, UpdatedAt: at,
		Categories: []parse.CategoryState{{Name: "A", Done: 50, Target: 50, State: parse.CatDone, Lines: &n, ExtraLines: &extra}}})
	writeFile(t, filepath.Join(root, "run/worker.json"), string(ws), at)
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-3 * time.Hour), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	a, b := catOf(t, s, "A"), catOf(t, s, "B")
	if a.Records != 52 || a.Done != 50 || a.DoneNote != "52 lines, 50 unique records (2 duplicate or unreadable)" || len(a.OverCap) != 0 || a.Left() != 0 {
		t.Errorf("A: records %d done %d note %q over %v left %d", a.Records, a.Done, a.DoneNote, a.OverCap, a.Left())
	}
	if b.Done != 40 || b.DoneNote != "42 lines, 40 records (2 blank or bad)" || b.Left() != 10 {
		t.Errorf("B: done %d note %q left %d", b.Done, b.DoneNote, b.Left())
	}
}
