package tui

import (
	"context"
	"errors"
	"sync"

	tea "charm.land/bubbletea/v2"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// Backend is everything the dashboard asks of the world (cmd/synthwatch's
// Live over a host; a fake in tests).
//
// Poll, Launch, Kill and Restart do I/O: the model calls them only inside
// tea.Cmds. The rest are called from Update and View and must be cheap,
// with no I/O: Host, Logs (copies of buffered lines), Link (the link's
// state as a value), ReconnectNow (a non-blocking signal) and Timeline
// (the pointer; its Recent is a read under a mutex). Timeline().Add writes
// the history file, so the model calls it only inside a tea.Cmd.
type Backend interface {
	Host() string
	Poll(ctx context.Context) snapshot.Snapshot
	Logs() (worker, server []string)
	Link() snapshot.Connection // State LinkLocal: a local root, no link
	Launch(ctx context.Context, only []string) (int, error)
	Kill(ctx context.Context, pid int) (string, error)
	Restart(ctx context.Context, cat string, all []string) (int, error)
	ReconnectNow()
	Timeline() *timeline.Timeline
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
func PollResult(m tea.Model, snap snapshot.Snapshot, be Backend) tea.Msg {
	w, s := be.Logs()
	return pollMsg{gen: m.(Model).gen, snap: snap, worker: w, server: s}
}
