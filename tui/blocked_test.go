package tui

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// blackHole is a Backend on a black-holed link: Poll never returns (it
// ignores its context, the worst a poll can do), and the actions return
// only when their context ends, saying so on cancelled.
type blackHole struct {
	*fake
	polls     atomic.Int32 // polls started
	returned  atomic.Int32 // polls that returned
	actions   atomic.Int32 // actions started
	cancelled chan string  // the action whose context ended
	release   chan struct{}
}

func newBlackHole(t *testing.T) *blackHole {
	b := &blackHole{fake: newFake(), cancelled: make(chan string, 8), release: make(chan struct{})}
	t.Cleanup(func() { close(b.release) })
	return b
}

func (b *blackHole) Poll(context.Context) snapshot.Snapshot {
	b.polls.Add(1)
	<-b.release
	b.returned.Add(1)
	return snapshot.Snapshot{}
}

func (b *blackHole) block(ctx context.Context, what string) error {
	b.actions.Add(1)
	select {
	case <-ctx.Done():
		b.cancelled <- what
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case <-b.release:
		return fmt.Errorf("%s: test over", what)
	}
}

func (b *blackHole) Launch(ctx context.Context, _ []string) (int, error) {
	return 0, b.block(ctx, "launch")
}
func (b *blackHole) Kill(ctx context.Context, _ int) (string, error) { return "", b.block(ctx, "kill") }
func (b *blackHole) Restart(ctx context.Context, _ string, _ []string) (int, error) {
	return 0, b.block(ctx, "restart")
}

// With a poll and a kill blocked on the link, every key still answers, in
// order: help, a log tab, search, the confirm dialogs, cancelling the kill
// (its context ends) and quit. The deadlines bound a hang; they are no
// measurement.
func TestKeysAnswerWhilePollAndActionBlock(t *testing.T) {
	b := newBlackHole(t)
	snap := running()
	worker := make([]string, 100)
	for i := range worker {
		worker[i] = "50/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h"
	}
	worker[10] = "needle in the log"
	tm := teatest.NewTestModel(t, probed{New(b, Config{PollEvery: 20 * time.Millisecond, Plain: true})}, teatest.WithInitialTermSize(120, 40))
	testgate.Eventually(t, 5*time.Second, "the first poll blocks", func() bool { return b.polls.Load() == 1 })
	// one snapshot got through before the link went black: the next poll blocks too
	tm.Send(pollMsg{gen: 0, snap: snap, worker: worker, server: []string{"server says hello"}})
	waitScreen(t, tm, "B3_magicoder")
	testgate.Eventually(t, 5*time.Second, "the second poll blocks", func() bool { return b.polls.Load() == 2 })

	tm.Send(press("K"))
	waitScreen(t, tm, "Kill worker pid 4242")
	tm.Send(press("y"))
	waitScreen(t, tm, "esc to cancel")
	testgate.Eventually(t, 5*time.Second, "the kill blocks", func() bool { return b.actions.Load() == 1 })

	steps := []struct {
		keys []string
		ok   func(m Model) bool
	}{
		{[]string{"?"}, func(m Model) bool { return m.help && strings.Contains(screen(m), "this help") }},
		{[]string{"x"}, func(m Model) bool { return !m.help }}, // any key closes the help
		{[]string{"2"}, func(m Model) bool { return m.logs.tab == 1 && strings.Contains(screen(m), "server says hello") }},
		{[]string{"1"}, func(m Model) bool { return m.logs.tab == 0 }},
		{[]string{"/"}, func(m Model) bool { return m.input != nil && strings.Contains(screen(m), "Search the log:") }},
		{[]string{"n", "e", "e", "d", "l", "e", "enter"}, func(m Model) bool {
			return m.input == nil && len(m.logs.matches) == 1 && strings.Contains(screen(m), "needle in the log")
		}},
		{[]string{"R"}, func(m Model) bool { return strings.Contains(screen(m), `Restart with "B1_glaive" first?`) }},
		{[]string{"n"}, func(m Model) bool { return m.dialog == nil }},
		{[]string{"L"}, func(m Model) bool { return strings.Contains(screen(m), "Launch the worker on") }},
		{[]string{"esc"}, func(m Model) bool { return m.dialog == nil && len(m.busy) == 1 }}, // in a dialog esc is no, not a cancel
		{[]string{"esc"}, func(m Model) bool {
			return len(m.busy) == 0 && strings.Contains(screen(m), "⚠ kill cancelled after") && strings.Contains(screen(m), killMaybe)
		}},
	}
	for i, s := range steps {
		for _, k := range s.keys {
			tm.Send(press(k))
		}
		if m := probe(t, tm); !s.ok(m) { // the probe queues behind the keys
			t.Fatalf("step %d %q:\n%s", i, s.keys, screen(m))
		}
	}
	select {
	case what := <-b.cancelled:
		if what != "kill" {
			t.Fatalf("cancelled %s, want the kill", what)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the kill's context was not cancelled")
	}
	tm.Send(press("q"))
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(probed).Model
	if b.returned.Load() != 0 {
		t.Fatal("a poll returned: the test proved nothing about a blocked one")
	}
	switch {
	case final.QuitMessage() == "":
		t.Error("no quit message")
	case len(final.busy) != 0 || final.dialog != nil || final.input != nil || final.help:
		t.Errorf("left open: busy %v dialog %v input %v help %v", final.busy, final.dialog, final.input, final.help)
	case final.logs.tab != 0 || final.logs.query != "needle" || len(final.logs.matches) != 1:
		t.Errorf("log tab %d, query %q, matches %v", final.logs.tab, final.logs.query, final.logs.matches)
	case !strings.HasPrefix(final.result, "kill cancelled after") || final.resultState != resultCancelled || b.actions.Load() != 1:
		t.Errorf("result %q (%d), %d actions", final.result, final.resultState, b.actions.Load())
	}
}

// probed is the model in a running program, with a probe: a probeMsg
// asks for the model as it stands after every message sent before it.
type probed struct{ Model }

type probeMsg chan Model

func (p probed) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if r, ok := msg.(probeMsg); ok {
		r <- p.Model
		return p, nil
	}
	m, cmd := p.Model.Update(msg)
	return probed{m.(Model)}, cmd
}

func probe(t *testing.T, tm *teatest.TestModel) Model {
	t.Helper()
	r := make(probeMsg, 1)
	tm.Send(r)
	select {
	case m := <-r:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("the program did not answer a probe: Update is blocked")
		return Model{}
	}
}

// Quit answers while a poll and an action block, and says what was left
// unconfirmed; it neither waits for nor cancels them.
func TestQuitWhileAnActionBlocks(t *testing.T) {
	b := newBlackHole(t)
	tm := teatest.NewTestModel(t, New(b, Config{PollEvery: time.Hour, Plain: true}), teatest.WithInitialTermSize(120, 40))
	tm.Send(pollMsg{gen: 0, snap: running()})
	waitScreen(t, tm, "B3_magicoder")
	tm.Send(press("L"))
	waitScreen(t, tm, "Launch the worker on")
	tm.Send(press("y"))
	waitScreen(t, tm, "launching…")
	testgate.Eventually(t, 5*time.Second, "the launch blocks", func() bool { return b.actions.Load() == 1 })
	tm.Send(press("q"))
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
	if q := final.QuitMessage(); !strings.Contains(q, "launch was still running when you quit: "+launchMaybe) {
		t.Errorf("quit message %q", q)
	}
	select {
	case what := <-b.cancelled:
		t.Errorf("quitting cancelled the %s", what)
	default:
	}
}

// ctrl+c cancels a running task first; with none left, it quits.
func TestCtrlCCancelsATaskBeforeItQuits(t *testing.T) {
	b := newBlackHole(t)
	b.snap = running()
	m, _ := newModel(b.fake, 120, 40, Config{})
	m.be = b
	m = step(m, press("K"))
	nm, cmd := m.Update(press("y"))
	m = nm.(Model)
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	m = step(m, press("ctrl+c")) // its Cmd is the poll that asks what the host did: it would block
	if !strings.Contains(screen(m), "⚠ kill cancelled after 0s: "+killMaybe) || m.quitMsg != "" {
		t.Fatalf("after ctrl+c:\n%s", screen(m))
	}
	if msg := (<-done).(actionMsg); msg.err == nil {
		t.Fatalf("the kill's Cmd ended without an error: %+v", msg)
	}
	if _, cmd = m.Update(press("ctrl+c")); cmd == nil || !isQuit(cmd) {
		t.Fatal("a second ctrl+c did not quit")
	}
}

// A cancelled action ends cancelled, with the right text, its context
// ends, and its late answer, failed or done anyway, overwrites neither
// the newer action's result nor the newer poll; the timeline keeps what it
// really did.
func TestCancelledActionsLateAnswerIsDropped(t *testing.T) {
	for _, tc := range []struct {
		name     string
		honours  bool // the action returns when its context ends
		timeline string
	}{
		{"returns on cancel", true, "launch cancelled by you; it ended: launch failed: launch: context canceled"},
		{"done anyway", false, "launch cancelled by you; it ended: launch: worker pid 4343"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.snap = running()
			m, _ := newModel(f, 120, 40, Config{})
			late := make(chan struct{})
			m.be = lateLaunch{f, tc.honours, late}
			m = step(m, press("L"))
			nm, cmd := m.Update(press("y"))
			m = nm.(Model)
			out := make(chan tea.Msg, 1)
			go func() { out <- cmd() }()
			m = step(m, press("esc"))
			if !strings.Contains(screen(m), "⚠ launch cancelled after 0s: "+launchMaybe) || len(m.busy) != 0 {
				t.Fatalf("after esc (busy %v):\n%s", m.busy, screen(m))
			}
			// newer state: a kill that succeeds, and a poll that shows a new worker
			m, msg := run(step(m, press("K")), press("y"))
			m = step(m, msg)
			newer := running()
			newer.Worker.PID = 5151
			m = step(m, pollMsg{gen: m.gen, snap: newer})
			gen := m.gen
			close(late)
			m = step(m, <-out)
			scr := screen(m)
			if !strings.Contains(scr, "✓ kill: pid 4242 gone") || strings.Contains(scr, "launch failed") || strings.Contains(scr, "launch: worker") {
				t.Errorf("the late answer overwrote the newer result:\n%s", scr)
			}
			if m.snap.Worker.PID != 5151 || m.gen != gen || len(m.busy) != 0 {
				t.Errorf("pid %d, gen %d→%d, busy %v", m.snap.Worker.PID, gen, m.gen, m.busy)
			}
			var texts []string
			found := false
			for _, e := range actionEvents(f.tl) {
				texts = append(texts, e.Text)
				found = found || e.Text == tc.timeline
			}
			if len(texts) != 2 || !found {
				t.Errorf("timeline %q, want %q in it", texts, tc.timeline)
			}
		})
	}
}

// lateLaunch launches only once late is closed, or, honouring its
// context, when the context ends.
type lateLaunch struct {
	*fake
	honours bool
	late    chan struct{}
}

func (l lateLaunch) Launch(ctx context.Context, only []string) (int, error) {
	if l.honours {
		<-ctx.Done()
		return 0, fmt.Errorf("launch: %w", ctx.Err())
	}
	<-l.late
	return l.fake.Launch(ctx, only)
}

// Reconnect is a task that ends with the first poll after it, one at a
// time; cancelling it only stops the waiting.
func TestReconnectIsATask(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, _ := newModel(f, 120, 40, Config{})
	m = step(m, press("C"))
	if !strings.Contains(screen(m), "reconnecting… 0s, esc to cancel") || f.reconn != 1 || !m.polling {
		t.Fatalf("reconn %d polling %v:\n%s", f.reconn, m.polling, screen(m))
	}
	gen := m.gen
	m = step(m, press("C")) // a second press while it runs: no second task
	if len(m.busy) != 1 || f.reconn != 1 || m.gen != gen {
		t.Fatalf("second C: busy %v, reconn %d, gen %d→%d", m.busy, f.reconn, gen, m.gen)
	}
	f.conn = snapshot.Connection{State: snapshot.LinkReconnecting, Error: "dial tcp: connection refused"}
	m = step(m, pollMsg{gen: m.gen, snap: f.snap})
	if !strings.Contains(screen(m), "✖ reconnect: the link is reconnecting: dial tcp: connection refused") || len(m.busy) != 0 {
		t.Fatalf("after its poll:\n%s", screen(m))
	}
	m = step(m, press("C"))
	m = step(m, press("esc"))
	if !strings.Contains(screen(m), "⚠ reconnect cancelled after 0s: "+reconnMaybe) || len(m.busy) != 0 || !m.polling {
		t.Fatalf("after esc (polling %v):\n%s", m.polling, screen(m))
	}
}

// While a poll blocks, asking for more polls (actions ending, reconnects)
// starts none beside it; one starts when it returns, and the blocked
// one's answer is dropped.
func TestABlockedPollIsNotJoinedByMore(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, _ := newModel(f, 120, 40, Config{})
	m = step(m, pollDue{gen: m.gen})
	blockedGen := m.gen
	for i := 0; i < 3; i++ {
		m.busy[10+i] = task{id: 10 + i, what: "kill"}
		nm, cmd := m.Update(actionMsg{id: 10 + i, what: "kill", text: "gone"})
		m = nm.(Model)
		if cmd != nil {
			t.Fatalf("action %d started a poll beside the blocked one", i)
		}
	}
	stale := running()
	stale.Worker.PID = 1
	nm, cmd := m.Update(pollMsg{gen: blockedGen, snap: stale})
	m = nm.(Model)
	if cmd == nil || !m.polling || m.snap.Worker.PID == 1 {
		t.Fatalf("after the blocked poll returned: cmd %v polling %v pid %d", cmd != nil, m.polling, m.snap.Worker.PID)
	}
	if msg, ok := cmd().(pollMsg); !ok || msg.gen != m.gen {
		t.Fatalf("the next poll is %T %+v, want gen %d", msg, msg, m.gen)
	}
}
