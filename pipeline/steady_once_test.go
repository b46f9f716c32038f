package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A steady poll through the agent asks the host nothing beside its
// request, whether a category grew or not: a read ahead of a file that
// did not grow went to the host by itself (over SFTP, for each category,
// for three polls after it last grew: 10,000 reads a poll at 10,000).
func TestSteadyPollAsksTheHostOnlyItsRequest(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range 5 {
		d := filepath.Join(root, "prepared", fmt.Sprintf("C%d", i))
		must(t, os.MkdirAll(d, 0o755))
		write(t, filepath.Join(d, "prompts.jsonl"), "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n")
		write(t, filepath.Join(d, "raw_responses.jsonl"), "{\"id\":1}\n")
	}
	s := sshdtest.Start(t)
	h := newProxied(t, s).dial(t)
	w := NewWatcher(h, Options{Host: "test", Root: root, ServerURL: closedURL(t), WorkerBin: filepath.Join(root, "absent")}, nil)
	raw := filepath.Join(root, "prepared", "C0", "raw_responses.jsonl")
	for poll := range 5 {
		if poll == 2 {
			f, err := os.OpenFile(raw, os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			fmt.Fprintln(f, "{\"id\":2}")
			f.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		snap := w.Poll(ctx)
		cancel()
		if _, misses := w.lastAsks.Counts(); poll > 0 && misses > 0 {
			t.Fatalf("poll %d asked the host %d questions beside the agent's request: %q", poll, misses, w.lastAsks.Missed())
		}
		if want := int64(1 + min(1, poll/2)); len(snap.Categories) != 5 || snap.Categories[0].Done != want {
			t.Fatalf("poll %d: %d categories, C0 done %d, want %d", poll, len(snap.Categories), snap.Categories[0].Done, want)
		}
	}
}
