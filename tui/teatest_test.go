package tui

import (
	"bytes"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

func waitScreen(t *testing.T, tm *teatest.TestModel, want string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(want)) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}

// The kill dialog in a running program: K opens it with the pid, y acts,
// the result is shown, q quits.
func TestTeatestKillConfirm(t *testing.T) {
	f := newFake()
	f.snap = running()
	tm := teatest.NewTestModel(t, New(f, Config{PollEvery: time.Hour, Plain: true}), teatest.WithInitialTermSize(120, 40))
	waitScreen(t, tm, "B3_magicoder")
	tm.Send(press("K"))
	waitScreen(t, tm, "Kill worker pid 4242")
	tm.Send(press("y"))
	waitScreen(t, tm, "pid 4242 gone")
	tm.Send(press("q"))
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model)
	if len(f.killed) != 1 || final.QuitMessage() == "" {
		t.Fatalf("killed %v, quit %q", f.killed, final.QuitMessage())
	}
}

func TestTeatestSearch(t *testing.T) {
	f := newFake()
	f.snap = running()
	for i := 0; i < 100; i++ {
		f.worker = append(f.worker, "50/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h")
	}
	f.worker[10] = "needle in the log"
	tm := teatest.NewTestModel(t, New(f, Config{PollEvery: time.Hour, Plain: true}), teatest.WithInitialTermSize(120, 40))
	waitScreen(t, tm, "B3_magicoder")
	tm.Send(press("/"))
	waitScreen(t, tm, "Search the log")
	for _, r := range "needle" {
		tm.Send(press(string(r)))
	}
	tm.Send(press("enter"))
	waitScreen(t, tm, "needle in the log") // scrolled back to the match
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model)
	if final.logs.query != "needle" || len(final.logs.matches) != 1 || final.logs.follow {
		t.Fatalf("search state %+v", final.logs.matches)
	}
}
