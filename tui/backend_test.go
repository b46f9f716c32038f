package tui

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/remote"
)

// Live asks whether the root is one while it finds no category, and says so
// in the snapshot the model draws.
func TestLiveReportsAWrongRoot(t *testing.T) {
	root := t.TempDir() // no prepared/
	checks := 0
	live := &Live{Name: "local", H: remote.Local{},
		W: pipeline.NewWatcher(remote.Local{}, pipeline.Options{Root: root, ServerURL: "http://127.0.0.1:1"}, nil),
		RootCheck: func(context.Context) error {
			checks++
			return errors.New(RootWarning + root + " on this machine (no prepared/ directory)")
		}}
	s := live.Poll(context.Background())
	if checks != 1 || !strings.HasPrefix(s.Warnings[len(s.Warnings)-1], RootWarning+root) {
		t.Fatalf("checks %d, warnings %q", checks, s.Warnings)
	}
	m, _ := newModel(newFake(), 80, 24, Config{})
	m = step(m, pollMsg{gen: m.gen, snap: s})
	if !strings.Contains(screen(m), "✖ "+RootWarning) {
		t.Errorf("%s", screen(m))
	}
}
