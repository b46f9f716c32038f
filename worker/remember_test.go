package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// addPrompts appends n prompts of about promptTok tokens to cat's
// prompts.jsonl, numbered from first.
func addPrompts(t *testing.T, root, cat string, first, n, promptTok int) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, "prepared", cat, parse.PromptsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pad := strings.Repeat("word ", promptTok*4/5)
	for i := first; i < first+n; i++ {
		fmt.Fprintf(f, `{"id":"%s-%d","messages":[{"role":"user","content":"question %d %s"}]}`+"\n", cat, i, i, pad)
	}
}

// TestWindowRememberedAcrossRuns: a run on the load sim keeps its last
// good window in run/windows.json for the server and class; the next run
// (a resume with more prompts) starts there, not at 8, and says so; a
// server restarted with another configuration (its KV pool and
// max_running_requests in server_info) starts afresh. Every prompt is
// written once throughout.
func TestWindowRememberedAcrossRuns(t *testing.T) {
	t.Parallel()
	s := startSim(t, sim.Options{Load: true, Speed: 100, MaxTotal: 60000, ShortMean: 600})
	root := makeLoadRoot(t, "B1", 500, 500)
	run := func() string {
		var log syncBuffer
		if err := Run(context.Background(), Config{Root: root, Server: s.URL(), MaxConcurrency: 200, AdaptEvery: 100 * time.Millisecond}, &log); err != nil {
			t.Fatalf("worker: %v\n%s", err, log.String())
		}
		return log.String()
	}
	first := run()
	if !strings.Contains(first, "B1: adaptive window from 8 to at most 200") {
		t.Fatalf("the first run did not start at 8:\n%s", first)
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(parse.WindowsPath)))
	if err != nil {
		t.Fatal(err)
	}
	var f windowsFile
	if err := json.Unmarshal(data, &f); err != nil || len(f.Windows) != 1 {
		t.Fatalf("windows.json: %v %s", err, data)
	}
	e := f.Windows[0]
	if e.Server != s.URL() || e.Class != "SHORT" || e.Window <= startWindow || e.Config == "" {
		t.Fatalf("windows.json entry %+v", e)
	}

	addPrompts(t, root, "B1", 500, 300, 500)
	second := run()
	want := fmt.Sprintf("B1: adaptive window from %d (the last good one for this server and class SHORT", e.Window)
	if !strings.Contains(second, want) {
		t.Errorf("the resume did not start from the remembered window %d:\n%s", e.Window, second)
	}

	s.Resize(30000, 64) // restarted with less memory and a lower max_running_requests
	addPrompts(t, root, "B1", 800, 300, 500)
	third := run()
	if !strings.Contains(third, "B1: adaptive window from 8 to at most 200") {
		t.Errorf("a server with another configuration did not start afresh:\n%s", third)
	}
	checkOutput(t, root, "B1", 1100)
}

// TestWindowRememberedWithinARun: two categories of one class in one run;
// the second starts from the window the first kept at its end, not at 8,
// and says so. Every prompt of both is written once.
func TestWindowRememberedWithinARun(t *testing.T) {
	t.Parallel()
	s := startSim(t, sim.Options{Load: true, Speed: 100, MaxTotal: 60000, ShortMean: 600})
	root := makeLoadRoot(t, "B1", 500, 500)
	if err := os.MkdirAll(filepath.Join(root, "prepared", "B2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "prepared", "B2", parse.PromptsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	addPrompts(t, root, "B2", 0, 300, 500)
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), MaxConcurrency: 200, AdaptEvery: 100 * time.Millisecond}, &log); err != nil {
		t.Fatalf("worker: %v\n%s", err, log.String())
	}
	out := log.String()
	if !strings.Contains(out, "B1: adaptive window from 8 to at most 200") {
		t.Fatalf("B1 did not start at 8:\n%s", out)
	}
	m := regexp.MustCompile(`B2: adaptive window from (\d+) \(the last good one for this server and class SHORT`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("B2 did not start from B1's window:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n <= startWindow {
		t.Fatalf("B2 started from %d, no more than the default %d:\n%s", n, startWindow, out)
	}
	checkOutput(t, root, "B1", 500)
	checkOutput(t, root, "B2", 300)
}

// windows.json is state: a server URL's password is not kept there (the
// window is remembered under the redacted URL, and found again by it).
func TestWindowRememberedWithoutThePassword(t *testing.T) {
	t.Parallel()
	s := startSim(t, sim.Options{Load: true, Speed: 100, MaxTotal: 60000, ShortMean: 600})
	root := makeLoadRoot(t, "B1", 300, 500)
	url := strings.Replace(s.URL(), "http://", "http://ops:hunter2secret@", 1)
	run := func() string {
		var log syncBuffer
		if err := Run(context.Background(), Config{Root: root, Server: url, MaxConcurrency: 200, AdaptEvery: 100 * time.Millisecond}, &log); err != nil {
			t.Fatalf("worker: %v\n%s", err, log.String())
		}
		return log.String()
	}
	run()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(parse.WindowsPath)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "hunter2secret") {
		t.Fatalf("windows.json keeps the password:\n%s", data)
	}
	var f windowsFile
	if err := json.Unmarshal(data, &f); err != nil || len(f.Windows) != 1 || f.Windows[0].Server != parse.Redact(url) {
		t.Fatalf("windows.json: %v %s", err, data)
	}
	addPrompts(t, root, "B1", 300, 200, 500)
	if second := run(); !strings.Contains(second, "(the last good one for this server and class SHORT") {
		t.Errorf("the window was not found again under the redacted URL:\n%s", second)
	}
}
