package pipeline

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// The records' span is asked for on a first poll (every category written
// within the stall limit), then only for a running category whose rate no
// fresher witness gives: the old script's fresh progress line is one, so
// its poll asks nothing more; with an empty log, the next poll asks for
// the writer's category alone.
func TestRecordSpanAskedOnlyWithoutAFresherWitness(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, log string
		want      []string // the categories the next poll asks for
	}{
		{"the log's fresh progress line", "150/300 (0 err) 20.4 req/s avg_comp=236tok ETA=7s\n", nil},
		{"an empty log", "", []string{"B3_magicoder"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			clk.t = time.Now().Truncate(time.Second)
			root, log := pyNight(t, clk.now().Add(-time.Hour))
			if c.log == "" {
				write(t, log, "")
			} else {
				appendTo(t, log, c.log)
			}
			raw := filepath.Join(root, "prepared", "B3_magicoder", "raw_responses.jsonl")
			appendTo(t, raw, pyRecords("B3_magicoder", 3, clk.now()))
			touch(t, raw, clk.now())
			startIn(t, root, "exec 3>>prepared/B3_magicoder/raw_responses.jsonl 1>>logs/inference_all.log; while :; do sleep 1; done", "python3", "run_inference.py")
			w := localWatcher(t, root, clk, Options{StallAfter: 10 * time.Minute})
			if argv := w.cnt.SpanArgv(); argv == nil || len(argv) != 9 {
				t.Fatalf("the first poll's ask: %q", argv)
			}
			var s snapshot.Snapshot
			deadline := time.Now().Add(30 * time.Second)
			for s = poll(w); !snapshot.Alive(s.Worker.State) && time.Now().Before(deadline); s = rescanPoll(w) {
				time.Sleep(100 * time.Millisecond)
			}
			if b3 := catByName(t, s, "B3_magicoder"); b3.State != snapshot.StateRunning {
				t.Fatalf("B3 %s", b3.State)
			}
			var got []string
			if argv := w.cnt.SpanArgv(); argv != nil {
				got = argv[9:]
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("the next poll asks for %q, want %q", got, c.want)
			}
		})
	}
}
