package digesttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Root is a pipeline root written line by line as the worker, the kill
// action and SGLang write their files, for nights told event by event.
type Root struct {
	t   testing.TB
	Dir string
}

// NewRoot is an empty root in a temporary directory.
func NewRoot(t testing.TB) Root {
	r := Root{t, t.TempDir()}
	if err := os.MkdirAll(filepath.Join(r.Dir, parse.PreparedDir), 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

// Add appends one line to the file at rel, a slash path under the root.
func (r Root) Add(rel, line string) {
	p := filepath.Join(r.Dir, filepath.FromSlash(rel))
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

// RunLine appends l to cat's runs.jsonl.
func (r Root) RunLine(cat string, l parse.RunLine) {
	b, _ := json.Marshal(l)
	r.Add(parse.PreparedDir+"/"+cat+"/"+parse.RunsFile, string(b))
}

// Start is run's start line on cat, as the worker writes it when it takes
// the category up.
func (r Root) Start(cat, run string, pid int, at time.Time) {
	r.RunLine(cat, parse.RunLine{Run: run, PID: pid, StartedAt: at.Format(time.RFC3339Nano)})
}

// Records writes one record a minute from..to (inclusive) of run in cat.
func (r Root) Records(cat, run string, from, to time.Time) {
	for t := from; !t.After(to); t = t.Add(time.Minute) {
		r.Add(parse.PreparedDir+"/"+cat+"/"+parse.RawFile, fmt.Sprintf(`{"id":%q,"run":%q,"completion_tokens":100,"finished_at":%q}`,
			run+t.Format("1504"), run, t.Format(time.RFC3339Nano)))
	}
}

// WorkerJSON writes worker.json.
func (r Root) WorkerJSON(pid int, state, cat string, updated time.Time) {
	b, _ := json.Marshal(parse.WorkerState{Schema: 1, PID: pid, State: state, Category: cat, Server: parse.DefaultServerURL, UpdatedAt: updated})
	p := filepath.Join(r.Dir, filepath.FromSlash(parse.WorkerStatePath))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// Server appends an SGLang log line at at.
func (r Root) Server(at time.Time, msg string) {
	r.Add(parse.ServerLogPath, "["+at.Format("2006-01-02 15:04:05")+"] "+msg)
}

// EndsNight writes the review's first night on 2026-12-02 (UTC), to be
// digested at 03:00: run a (pid 101) stopped at 00:41 by a signal someone
// else sent (its end line, no kill mark); run b (pid 102) stopped by
// synthwatch's kill (its mark; no end line: killed after the grace); run c
// (pid 103) took B up at 01:31, wrote nothing there and died (worker.json
// still says running, last written 01:50); the server went quiet after
// 00:58 and started again, ready at 01:04.
func EndsNight(t testing.TB) Root {
	hm := func(h, m int) time.Time { return time.Date(2026, 12, 2, h, m, 0, 0, time.UTC) }
	r := NewRoot(t)
	r.Start("A", "a", 101, hm(0, 10))
	r.Records("A", "a", hm(0, 11), hm(0, 40))
	r.RunLine("A", parse.RunLine{Run: "a", PID: 101, EndedAt: hm(0, 41).Format(time.RFC3339Nano), End: parse.RunStopped, Cause: "terminated signal received"})
	r.Start("A", "b", 102, hm(0, 45))
	r.Records("A", "b", hm(0, 46), hm(1, 0))
	r.Add(parse.WorkerLogPath, parse.FormatKill(102, 45*time.Second))
	r.Start("A", "c", 103, hm(1, 5))
	r.Records("A", "c", hm(1, 6), hm(1, 30))
	r.Start("B", "c", 103, hm(1, 31)) // B hangs: no record at all
	// B is a category by its prompts.jsonl, as status finds one (left
	// empty: the figures stay as they were)
	if err := os.WriteFile(filepath.Join(r.Dir, parse.PreparedDir, "B", parse.PromptsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.WorkerJSON(103, parse.WorkerRunning, "B", hm(1, 50))
	r.Server(hm(0, 5), "The server is fired up and ready to roll!")
	for m := 6; m <= 58; m += 2 {
		r.Server(hm(0, m), "Decode batch, #running-req: 8, #token: 9000, token usage: 0.10, cuda graph: True, gen throughput (token/s): 400.00, #queue-req: 0")
	}
	r.Server(hm(1, 2), "Load weight begin. avail mem=79.00 GB")
	r.Server(hm(1, 4), "The server is fired up and ready to roll!")
	return r
}
