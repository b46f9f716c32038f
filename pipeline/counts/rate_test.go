package counts

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// ReadTimeline gives a one-shot status the history's class rates but
// writes nothing back.
func TestReadTimelineLeavesTheHistory(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "h.jsonl")
	timeline.New(10, p).Add(snapshot.Event{Time: time.Now(), Kind: "category_done", Category: "B4", Class: "LONG", RatePerMin: 40, Key: "k"})
	before, _ := os.ReadFile(p)
	tl := timeline.Read(10, p)
	tl.Add(snapshot.Event{Time: time.Now(), Kind: "stall_start", Category: "B5", Text: "x"})
	after, _ := os.ReadFile(p)
	k := New(Config{Layout: parseLayout(t.TempDir()), Timeline: tl})
	if r := k.classRate("LONG"); r != 40 || string(before) != string(after) || len(before) == 0 {
		t.Fatalf("class rate %v; history changed: %v", r, string(before) != string(after))
	}
}
