package liveness

import (
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The worker's part folds the lines the worker writes, made by parse's
// Format functions: a wait for the server, its end, and a kill marker.
func TestFoldsTheLinesTheWorkerWrites(t *testing.T) {
	t.Parallel()
	l := New(Config{Layout: parse.Layout{Root: t.TempDir()}})
	fold := func(line string) { l.FoldLogLine(parse.ParseWorkerLine(line)) }
	fold(parse.FormatWaiting(parse.DefaultServerURL, "Get /health: connection refused (ConnectionError)"))
	if !l.waiting {
		t.Fatal("the worker's waiting line did not say it waits for /health")
	}
	fold(parse.FormatBack(parse.DefaultServerURL, 90*time.Second))
	if l.waiting {
		t.Fatal("the worker's back line did not end the wait")
	}
	fold(parse.FormatKill(4242, 30*time.Second))
	if !l.killed[4242] {
		t.Fatal("the kill marker did not name pid 4242")
	}
}
