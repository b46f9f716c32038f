package tui

import (
	"errors"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// A question still open when the program ends is refused, never accepted,
// and one asked later is refused at once: the connection's goroutine that
// asked must not wait for good (issue 15).
func TestPrompterCloseRefusesOpenAndLaterQuestions(t *testing.T) {
	p := NewPrompter()
	asked := make(chan PromptMsg, 1)
	p.Attach(func(m tea.Msg) { asked <- m.(PromptMsg) })
	type answer struct {
		ok  bool
		err error
	}
	got := make(chan answer, 1)
	go func() {
		ok, err := p.ConfirmHostKey("127.0.0.1:22", "SHA256:x", "ssh-ed25519")
		got <- answer{ok, err}
	}()
	select {
	case <-asked: // on screen, and nobody answers
	case <-time.After(10 * time.Second):
		t.Fatal("the question never reached the program")
	}
	p.Close()
	select {
	case a := <-got:
		if a.ok || !errors.Is(a.err, ErrPromptCancelled) {
			t.Fatalf("cancelled question: ok=%v err=%v, want a refusal", a.ok, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ConfirmHostKey still waits after Close")
	}
	if ok, err := p.ConfirmHostKey("127.0.0.1:22", "SHA256:x", "ssh-ed25519"); ok || !errors.Is(err, ErrPromptCancelled) {
		t.Fatalf("question after Close: ok=%v err=%v", ok, err)
	}
	if pass, err := p.Passphrase("/k"); pass != nil || !errors.Is(err, ErrPromptCancelled) {
		t.Fatalf("passphrase after Close: %q %v", pass, err)
	}
	p.Close() // twice is fine
}

// Close before the program ever ran (it failed to start) ends a question
// that waits for it.
func TestPrompterCloseBeforeAttach(t *testing.T) {
	p := NewPrompter()
	got := make(chan error, 1)
	go func() { _, err := p.Passphrase("/k"); got <- err }()
	p.Close()
	select {
	case err := <-got:
		if !errors.Is(err, ErrPromptCancelled) {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Passphrase still waits for a program that never came")
	}
}

// An answered question still works as before.
func TestPrompterAnswer(t *testing.T) {
	p := NewPrompter()
	defer p.Close()
	p.Attach(func(m tea.Msg) { m.(PromptMsg).Reply <- "yes" })
	if ok, err := p.ConfirmHostKey("h", "fp", "t"); !ok || err != nil {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
}
