package worker

import (
	"bufio"
	"context"
	"errors"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// runLines reads a category's runs.jsonl: its start and end lines (its
// tally lines: tallyLines).
func runLines(t *testing.T, root, cat string) []parse.RunLine {
	t.Helper()
	var out []parse.RunLine
	for _, l := range allRunLines(t, root, cat) {
		if !l.IsTally() {
			out = append(out, l)
		}
	}
	return out
}

// allRunLines reads every line of a category's runs.jsonl.
func allRunLines(t *testing.T, root, cat string) []parse.RunLine {
	t.Helper()
	f, err := os.Open(filepath.Join(root, parse.PreparedDir, cat, parse.RunsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []parse.RunLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l, err := parse.ParseRunLine(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// A run says how it ended, in the runs.jsonl of the category it worked on
// last: stopped, with the signal's word, then finished.
func TestRunWritesItsEnd(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 200})
	s := startSim(t, sim.Options{Speed: 60})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		for countLines(t, filepath.Join(root, "prepared", "B1", "raw_responses.jsonl")) < 30 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel(errors.New("terminated signal received")) // what signal.NotifyContext's cause says
	}()
	var log syncBuffer
	if err := Run(ctx, Config{Root: root, Server: s.URL(), Concurrency: 8, Grace: 5 * time.Second}, &log); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), Concurrency: 8}, &log); err != nil {
		t.Fatal(err)
	}
	ls := runLines(t, root, "B1")
	if len(ls) != 4 {
		t.Fatalf("runs.jsonl: %+v, want start, end, start, end", ls)
	}
	stop, done := ls[1], ls[3]
	if ls[0].IsEnd() || !stop.IsEnd() || stop.End != parse.RunStopped || stop.Cause != "terminated signal received" || stop.Run != ls[0].Run ||
		stop.PID != os.Getpid() {
		t.Errorf("the stop's end line: %+v after %+v", stop, ls[0])
	}
	if !done.IsEnd() || done.End != parse.RunFinished || done.Run != ls[2].Run || done.Run == stop.Run {
		t.Errorf("the finish's end line: %+v", done)
	}
	if _, err := time.Parse(time.RFC3339Nano, done.EndedAt); err != nil {
		t.Errorf("ended_at %q: %v", done.EndedAt, err)
	}
}
