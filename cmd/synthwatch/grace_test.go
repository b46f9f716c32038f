package main

import (
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/worker"
)

// kill waits longer than the worker drains: a worker that finishes its
// requests in flight within its own grace is "gone", never SIGKILLed in
// the middle of its last writes. Every command that kills uses it.
func TestKillGraceOutlastsTheWorkersDrain(t *testing.T) {
	if actions.KillGrace <= worker.DefaultGrace {
		t.Fatalf("kill's grace %s is not longer than the worker's drain %s", actions.KillGrace, worker.DefaultGrace)
	}
	root := newRoot()
	for _, path := range [][]string{{"kill"}, {"restart"}, {}} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags().Lookup("grace")
		if f == nil || f.DefValue != actions.KillGrace.String() {
			t.Errorf("%q --grace defaults to %v, want %s", path, f, actions.KillGrace)
		}
	}
}
