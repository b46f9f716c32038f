package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/tui"
)

// Live asks whether the root is one while it finds no category, and says so
// in the snapshot the model draws.
func TestLiveReportsAWrongRoot(t *testing.T) {
	root := t.TempDir() // no prepared/
	checks := 0
	live := &Live{Name: "local", Remote: remote.Local{},
		Watcher: pipeline.NewWatcher(remote.Local{}, pipeline.Options{Root: root, ServerURL: "http://127.0.0.1:1"}, nil),
		RootCheck: func(context.Context) error {
			checks++
			return errors.New(tui.RootWarning + root + " on this machine (no prepared/ directory)")
		}}
	s := live.Poll(context.Background())
	if checks != 1 || !strings.HasPrefix(s.Warnings[len(s.Warnings)-1], tui.RootWarning+root) {
		t.Fatalf("checks %d, warnings %q", checks, s.Warnings)
	}
	m := tea.Model(tui.New(live, tui.Config{}))
	m, _ = m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m, _ = m.Update(tui.PollResult(m, s, live))
	if got := ansi.Strip(m.View().Content); !strings.Contains(got, "✖ "+tui.RootWarning) {
		t.Errorf("%s", got)
	}
}

// A local root has no link: Live says so as pipeline's LinkLocal, the one
// view of the link the dashboard reads.
func TestLiveLinkOfALocalRoot(t *testing.T) {
	live := &Live{Name: "local", Remote: remote.Local{},
		Watcher: pipeline.NewWatcher(remote.Local{}, pipeline.Options{Root: t.TempDir(), ServerURL: "http://127.0.0.1:1"}, nil)}
	if c := live.Link(); c.State != snapshot.LinkLocal || c.Linked() || c.Stale() || !c.State.Up() {
		t.Fatalf("link %+v", c)
	}
}

// BenchmarkLongNight drives the real watcher and model through 10,000 polls
// while 100,000 log lines arrive, and reports RSS at the half and at the
// end. Target: <= 60 MB, and flat (end ≈ half).
func BenchmarkLongNight(b *testing.B) {
	for b.Loop() {
		root := b.TempDir()
		os.MkdirAll(filepath.Join(root, "logs"), 0o755)
		for i := 0; i < 10; i++ {
			d := filepath.Join(root, "prepared", fmt.Sprintf("B%d_cat", i))
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte(strings.Repeat(`{"id":1}`+"\n", 10)), 0o644)
		}
		wlog, _ := os.OpenFile(filepath.Join(root, "logs", "inference_all.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		raw, _ := os.OpenFile(filepath.Join(root, "prepared", "B3_cat", "raw_responses.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		clock := time.Now()
		w := pipeline.NewWatcher(remote.Local{}, pipeline.Options{Root: root, ServerURL: "http://127.0.0.1:1", Now: func() time.Time { return clock }}, nil)
		live := &Live{Name: "bench", Remote: remote.Local{}, Watcher: w}
		m := tea.Model(tui.New(live, tui.Config{PollEvery: time.Second}))
		m, _ = m.Update(tea.WindowSizeMsg{Width: 200, Height: 50})
		var half float64
		for p := 0; p < 10000; p++ {
			var lines strings.Builder
			for k := 0; k < 10; k++ {
				fmt.Fprintf(&lines, "%d/100000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h \x1b[31mred\x1b[0m\n", p*10+k)
			}
			wlog.WriteString(lines.String())
			raw.WriteString(`{"id":"x","completion_tokens":1}` + "\n")
			clock = clock.Add(time.Second)
			m, _ = m.Update(tui.PollResult(m, w.Poll(b.Context()), live))
			if p%100 == 0 {
				_ = m.View()
			}
			if p == 5000 {
				runtime.GC()
				half = testbin.RSSMB("self")
			}
		}
		runtime.GC()
		b.ReportMetric(half, "RSS_MB_half")
		b.ReportMetric(testbin.RSSMB("self"), "RSS_MB_end")
		wlog.Close()
		raw.Close()
	}
}
