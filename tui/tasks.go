package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// task is a long action in flight (gh-dash's tasks): its id orders the
// spinner and lets a late answer be dropped; cancel ends its context.
type task struct {
	id    int
	what  string // the result's name: "launch", "kill", "restart B3", "reconnect"
	doing string // the spinner's: "launching", "killing pid 4242"
	began time.Time
	// cancel ends the action's context (nil: nothing to end, the task is
	// only waited for, as a reconnect's poll).
	cancel func()
	// ifCancelled says what the host may have done anyway: a request that
	// was sent is not undone by the cancel, only no longer waited for.
	ifCancelled string
	gen         int // a reconnect ends with the first poll of this generation
}

// errCancelled is the cause of a context the user cancelled, so the
// action's Cmd can tell a cancel from a timeout.
var errCancelled = errors.New("cancelled by you")

// actionTask is the task of a confirmed host action.
func actionTask(what, doing, ifCancelled string) task {
	return task{what: what, doing: doing, ifCancelled: ifCancelled}
}

// What a cancel may leave done, per action. A cancel closes the SSH
// channel; a remote step already running may have finished.
const (
	launchMaybe  = "the worker may have started anyway (not confirmed); the next poll shows it"
	killMaybe    = "SIGTERM may have been sent: the worker may be stopping or stopped (not confirmed)"
	restartMaybe = "the worker may have been stopped, and a new one started (not confirmed)"
	reconnMaybe  = "nothing on the host changes; the link keeps retrying in the background"
)

// action runs f as a long action with an id; its result comes back as an
// actionMsg. The Cmd also records the result in the timeline, which writes
// the history file: no disk I/O in Update.
func (m *Model) action(t task, f func(ctx context.Context) (string, error)) tea.Cmd {
	m.actionID++
	t.id, t.began = m.actionID, m.cfg.Now()
	ctx, cancel := context.WithCancelCause(context.Background())
	t.cancel = func() { cancel(errCancelled) }
	m.busy[t.id] = t
	tl, now, id, what := m.be.Timeline(), m.cfg.Now, t.id, t.what
	return func() tea.Msg {
		defer cancel(nil)
		tctx, stop := context.WithTimeout(ctx, 3*time.Minute)
		defer stop()
		text, err := f(tctx)
		msg := actionMsg{id: id, what: what, text: text, err: err}
		line := msg.result()
		if errors.Is(context.Cause(ctx), errCancelled) {
			line = what + " cancelled by you; it ended: " + line // the truth, late: the timeline keeps it
		}
		tl.Add(snapshot.Event{Time: now().UTC(), Kind: "action", Text: line})
		return msg
	}
}

// oldestTask is the task the spinner names and esc cancels: the oldest.
// Map order is random; this is not.
func (m Model) oldestTask() (task, int) {
	var first task
	n := 0
	for _, t := range m.busy {
		if n == 0 || t.id < first.id {
			first = t
		}
		n++
	}
	return first, n
}

// busyLabel is what the spinner says: the oldest running task, how long
// it has run, how many more run beside it, and how to cancel it.
func (m Model) busyLabel() string {
	t, n := m.oldestTask()
	if n == 0 {
		return ""
	}
	s := fmt.Sprintf("%s… %s", t.doing, dur(m.cfg.Now().Sub(t.began)))
	if n > 1 {
		s += fmt.Sprintf(" (+%d)", n-1)
	}
	return s + ", " + m.keys.Stop.Help().Key + " to cancel"
}

// cancelTask cancels the oldest task: its context ends, it leaves the
// spinner at once, and the header says what the host may have done. Its
// late answer is dropped by id, so it cannot overwrite a newer state.
func (m *Model) cancelTask() tea.Cmd {
	t, n := m.oldestTask()
	if n == 0 {
		return nil
	}
	if t.cancel != nil {
		t.cancel()
	}
	delete(m.busy, t.id)
	m.result = fmt.Sprintf("%s cancelled after %s: %s", t.what, dur(m.cfg.Now().Sub(t.began)), t.ifCancelled)
	m.resultState = resultCancelled
	if t.what == "reconnect" {
		return nil // the poll it waited for goes on as a regular one
	}
	return m.pollNow() // what did the host do? ask it
}

// reconnect drops the link and redials (the host's supervisor does it),
// as a task that ends with the first poll after it. One at a time.
func (m *Model) reconnect() tea.Cmd {
	for _, t := range m.busy {
		if t.what == "reconnect" {
			return nil
		}
	}
	m.be.ReconnectNow() // a non-blocking signal
	m.actionID++
	cmd := m.pollNow()
	m.busy[m.actionID] = task{id: m.actionID, what: "reconnect", doing: "reconnecting", began: m.cfg.Now(), ifCancelled: reconnMaybe, gen: m.gen}
	return cmd
}

// reconnected ends a reconnect task with the poll of its generation.
func (m *Model) reconnected(gen int) {
	for id, t := range m.busy {
		if t.what != "reconnect" || t.gen != gen {
			continue
		}
		delete(m.busy, id)
		if m.conn.State == snapshot.LinkConnected || !m.conn.Linked() {
			m.result, m.resultState = "reconnect: connected", resultOK
		} else {
			m.result, m.resultState = "reconnect: the link is "+string(m.conn.State), resultFailed
			if m.conn.Error != "" {
				m.result += ": " + m.conn.Error
			}
		}
	}
}

// resultState is how the last action ended, for the header's mark.
type resultState int

const (
	resultOK resultState = iota
	resultFailed
	resultCancelled
)
