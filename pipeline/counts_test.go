package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

func hasWarning(s snapshot.Snapshot, sub string) bool {
	for _, w := range s.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

// A count that fails keeps the last good figure, says why in the row and
// the warnings, and is right again once the file is (integrity #11). As
// root, permissions do not fail: a directory in place of the file, a
// vanished file, and a tail that fails on the host are real failures.
func TestFailedCountKeepsTheLastFigureAndSaysWhy(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B1")
	raw := filepath.Join(dir, "raw_responses.jsonl")
	write(t, filepath.Join(dir, "prompts.jsonl"), prompts("B1", 400))
	write(t, raw, records("B1", 0, 100))
	w := localWatcher(t, root, c, Options{})
	check := func(what string, done, target int64, failed bool) snapshot.Snapshot {
		t.Helper()
		c.advance(2e9)
		s := poll(w)
		b1 := catByName(t, s, "B1")
		if b1.Done != done || b1.Lines != done || b1.Target != target || (b1.CountError != "") != failed || hasWarning(s, "B1: count failed") != failed {
			t.Fatalf("%s: done %d lines %d target %d count_error %q warnings %q; want done %d target %d failed %v",
				what, b1.Done, b1.Lines, b1.Target, b1.CountError, s.Warnings, done, target, failed)
		}
		if failed && (len(b1.Warnings) == 0 || !strings.Contains(b1.Warnings[0], "count failed")) {
			t.Fatalf("%s: the row's first warning is not why: %q", what, b1.Warnings)
		}
		return s
	}
	check("start", 100, 400, false)

	must(t, os.Rename(raw, raw+".away"))
	mkdir(t, raw)
	check("a directory in place of the file", 100, 400, true)
	must(t, os.Remove(raw))
	must(t, os.Rename(raw+".away", raw))
	appendTo(t, raw, records("B1", 100, 50))
	check("back", 150, 400, false)

	must(t, os.Rename(raw, raw+".away"))
	s := check("vanished", 150, 400, true)
	if b1 := catByName(t, s, "B1"); !strings.Contains(b1.CountError, "raw_responses.jsonl vanished") {
		t.Fatalf("vanished: %q", b1.CountError)
	}
	appendTo(t, raw+".away", records("B1", 150, 20))
	must(t, os.Rename(raw+".away", raw))
	check("returned", 170, 400, false)
}

// brokenTail runs the host's commands with a tail that fails, as a host
// whose tail cannot read the file would.
type brokenTail struct {
	remote.Local
	bin    string
	broken bool
}

func (b *brokenTail) Exec(ctx context.Context, argv ...string) (remote.ExecResult, error) {
	if b.broken {
		argv = append([]string{"env", "PATH=" + b.bin + ":" + os.Getenv("PATH")}, argv...)
	}
	return b.Local.Exec(ctx, argv...)
}

// A big file's growth is counted on the host: a tail failing there (sh has
// no pipefail) was 0 lines stored as good, and the figure stayed low for
// good. Now it is an error, the figure stays, and the next count is exact.
func TestFailedHostCountIsNotZeroLines(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B1")
	raw := filepath.Join(dir, "raw_responses.jsonl")
	write(t, filepath.Join(dir, "prompts.jsonl"), prompts("B1", 20000))
	write(t, raw, records("B1", 0, 3000)) // ~400 KB: counted on the host
	bin := t.TempDir()
	write(t, filepath.Join(bin, "tail"), "#!/bin/sh\necho 'tail: cannot open file: Input/output error' >&2\nexit 1\n")
	must(t, os.Chmod(filepath.Join(bin, "tail"), 0o755))
	h := &brokenTail{bin: bin}
	o := Options{Root: root, Host: "local", Now: c.now, ServerURL: closedURL(t)}
	w := NewWatcher(h, o, nil)
	if b1 := catByName(t, poll(w), "B1"); b1.Done != 3000 {
		t.Fatalf("start: %+v", b1)
	}
	h.broken = true
	appendTo(t, raw, records("B1", 3000, 3000)) // more than RemoteAbove new: on the host
	c.advance(2e9)
	s := poll(w)
	b1 := catByName(t, s, "B1")
	if b1.Done != 3000 || !strings.Contains(b1.CountError, "Input/output error") || !hasWarning(s, "B1: count failed") {
		t.Fatalf("broken tail: done %d count_error %q warnings %q", b1.Done, b1.CountError, s.Warnings)
	}
	h.broken = false
	c.advance(2e9)
	if b1 := catByName(t, poll(w), "B1"); b1.Done != 6000 || b1.CountError != "" {
		t.Fatalf("fixed: done %d count_error %q", b1.Done, b1.CountError)
	}
}

// With worker.json's extra_lines, DONE is unique records and a warning
// says how many lines are not; without worker.json it is the records
// (blank and bad lines aside), as parse.JudgeDone says for the report too.
func TestDoneIsUniqueRecordsWhenWorkerJSONMeasuredThem(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B2")
	raw := filepath.Join(dir, "raw_responses.jsonl")
	write(t, filepath.Join(dir, "prompts.jsonl"), prompts("B2", 400))
	write(t, raw, records("B2", 0, 120)+records("B2", 0, 30)+strings.Repeat("\n", 5)+strings.Repeat("{bad\n", 5))
	w := localWatcher(t, root, c, Options{})
	s0 := poll(w)
	if b2 := catByName(t, s0, "B2"); b2.Done != 150 || b2.Lines != 160 || !hasWarning(s0, "B2: 160 lines, 150 records (10 blank or bad)") {
		t.Fatalf("no worker.json: the records the host examined (as the report counts them): %+v %q", b2, s0.Warnings)
	}
	lines, extra := int64(160), int64(40)
	writeWorkerJSON(t, root, parse.WorkerState{PID: 1 << 22, State: parse.WorkerStopped, UpdatedAt: c.now(),
		Categories: []parse.CategoryState{{Name: "B2", Done: 120, Target: 400, State: parse.CatStopped, Lines: &lines, ExtraLines: &extra}}})
	c.advance(2e9)
	s := poll(w)
	b2 := catByName(t, s, "B2")
	if b2.Done != 120 || b2.Lines != 160 || !hasWarning(s, "B2: 160 lines, 120 unique records (40 duplicate or unreadable)") {
		t.Fatalf("worker.json: done %d lines %d warnings %q", b2.Done, b2.Lines, s.Warnings)
	}
	appendTo(t, raw, records("B2", 120, 10)) // the worker appends unique records only
	c.advance(2e9)
	if b2 := catByName(t, poll(w), "B2"); b2.Done != 130 || b2.Lines != 170 {
		t.Fatalf("after growth: %+v", b2)
	}
}

// ERR: the Python script's "(N err)" counts when nothing else does, and
// worker.json's failed_prompts (prompts whose latest attempt failed) wins
// over errors.jsonl lines, which a prompt failing on every start inflates.
func TestErrorsFromTheProgressLineAndFailedPrompts(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B1")
	write(t, filepath.Join(dir, "prompts.jsonl"), prompts("B1", 100))
	write(t, filepath.Join(dir, "raw_responses.jsonl"), records("B1", 0, 50))
	write(t, filepath.Join(root, "logs", "inference_all.log"), "Processing: B1 (SHORT)\nB1: 100 prompts\n50/100 (7 err) 1.0 req/s avg_comp=200tok ETA=1m\n")
	w := localWatcher(t, root, c, Options{})
	if b1 := catByName(t, poll(w), "B1"); b1.Errors != 7 {
		t.Fatalf("python (N err): %+v", b1)
	}
	write(t, filepath.Join(dir, "errors.jsonl"), strings.Repeat(`{"id":"B1-99","reason":"400"}`+"\n", 10))
	failed := 1
	writeWorkerJSON(t, root, parse.WorkerState{PID: 1 << 22, State: parse.WorkerStopped, UpdatedAt: c.now(),
		Categories: []parse.CategoryState{{Name: "B1", Done: 50, Target: 100, Errors: 2, State: parse.CatStopped, FailedPrompts: &failed}}})
	c.advance(2e9)
	if b1 := catByName(t, poll(w), "B1"); b1.Errors != 1 {
		t.Fatalf("failed_prompts: %+v", b1)
	}
}

// A gateway's preemptions are the category's yielded count, not its errors:
// worker.json says how many, and the Snapshot (status --json, the header)
// carries it as the worker wrote it.
func TestYieldedFromWorkerJSONIsNoError(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B2")
	write(t, filepath.Join(dir, "prompts.jsonl"), prompts("B2", 400))
	write(t, filepath.Join(dir, "raw_responses.jsonl"), records("B2", 0, 120))
	w := localWatcher(t, root, c, Options{})
	writeWorkerJSON(t, root, parse.WorkerState{PID: 1 << 22, State: parse.WorkerStopped, UpdatedAt: c.now(),
		Categories: []parse.CategoryState{{Name: "B2", Done: 120, Target: 400, State: parse.CatStopped, Yielded: 13}}})
	b2 := catByName(t, poll(w), "B2")
	if b2.Yielded != 13 || b2.Errors != 0 {
		t.Fatalf("yielded %d errors %d, want 13 and 0", b2.Yielded, b2.Errors)
	}
}
