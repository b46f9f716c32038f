package tui

import (
	"context"
	"errors"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/remote"
)

// Live is the Backend over a real host and pipeline watcher.
type Live struct {
	Name    string
	H       remote.Host
	W       *pipeline.Watcher
	Act     pipeline.Actor
	Grace   time.Duration
	Reconn  func()
	ConnSrc func() remote.ConnState
	// RootCheck says whether the root is a pipeline root (has prepared/);
	// it runs inside Poll while no category has been found.
	RootCheck func(ctx context.Context) error
}

func (l *Live) Host() string { return l.Name }
func (l *Live) Poll(ctx context.Context) pipeline.Snapshot {
	s := l.W.Poll(ctx)
	up := s.Connection.State == "connected" || s.Connection.State == "local"
	if len(s.Categories) == 0 && up && l.RootCheck != nil {
		if err := l.RootCheck(ctx); err != nil {
			s.Warnings = append(s.Warnings, err.Error())
		}
	}
	return s
}
func (l *Live) Logs() ([]string, []string)   { return l.W.WorkerLog.Lines(), l.W.ServerLog.Lines() }
func (l *Live) Timeline() *pipeline.Timeline { return l.W.Timeline() }
func (l *Live) Conn() (remote.ConnState, bool) {
	if l.ConnSrc == nil {
		return remote.ConnState{}, false
	}
	return l.ConnSrc(), true
}
func (l *Live) Launch(ctx context.Context, only []string) (int, error) {
	return l.Act.Launch(ctx, only)
}
func (l *Live) Kill(ctx context.Context, pid int) (string, error) {
	return l.Act.Kill(ctx, pid, l.Grace)
}
func (l *Live) Restart(ctx context.Context, cat string, all []string) (int, error) {
	r, err := l.Act.Restart(ctx, cat, all, l.Grace, 0)
	return r.PID, err
}
func (l *Live) ReconnectNow() {
	if l.Reconn != nil {
		l.Reconn()
	}
}

// ErrPromptCancelled is the answer to a question asked after, or still
// open when, the program ended: nobody is there to answer it.
var ErrPromptCancelled = errors.New("the dashboard ended before the question was answered")

// Prompter asks inside the running program: the connection's goroutine
// sends a PromptMsg and waits for the answer. Until the program exists it
// waits too, so a host-key question is never lost behind a redraw. Close
// ends every wait: an open or later question is refused, never accepted.
type Prompter struct {
	ready chan struct{}
	done  chan struct{}
	once  sync.Once
	send  func(tea.Msg)
}

// NewPrompter makes a prompter; call Attach once the program runs, and
// Close once it has ended.
func NewPrompter() *Prompter {
	return &Prompter{ready: make(chan struct{}), done: make(chan struct{})}
}

// Attach connects the prompter to the program.
func (p *Prompter) Attach(send func(tea.Msg)) { p.send = send; close(p.ready) }

// Close cancels the open question, if any, and refuses every later one.
// Call it when the program ends and before closing the connection: the
// connection's supervisor may be waiting for an answer.
func (p *Prompter) Close() { p.once.Do(func() { close(p.done) }) }

func (p *Prompter) ask(text string, secret bool) (string, error) {
	select {
	case <-p.ready:
	case <-p.done:
		return "", ErrPromptCancelled
	}
	select {
	case <-p.done: // Attach then Close: do not send to an ended program
		return "", ErrPromptCancelled
	default:
	}
	reply := make(chan string, 1) // Update answers without blocking
	go p.send(PromptMsg{Text: text, Secret: secret, Reply: reply})
	select {
	case a := <-reply:
		return a, nil
	case <-p.done:
		return "", ErrPromptCancelled
	}
}

func (p *Prompter) ConfirmHostKey(host, fp, keyType string) (bool, error) {
	a, err := p.ask("The host "+host+" is not known. Its "+keyType+" key fingerprint is "+fp+
		". Trust it and add it to known_hosts? Type yes to accept (default No).", false)
	if err != nil {
		return false, err
	}
	return a == "yes" || a == "y", nil
}

func (p *Prompter) Passphrase(keyFile string) ([]byte, error) {
	a, err := p.ask("Passphrase for "+keyFile+":", true)
	if err != nil {
		return nil, err
	}
	return []byte(a), nil
}

// PollResult is the message one poll produces, for harnesses (the soak test)
// that drive the model without a program.
func PollResult(m tea.Model, snap pipeline.Snapshot, live *Live) tea.Msg {
	w, s := live.Logs()
	return pollMsg{gen: m.(Model).gen, snap: snap, worker: w, server: s}
}
