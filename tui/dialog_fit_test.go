package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// The host-key question as the Prompter asks it, at every width: the
// fingerprint the user must compare is on one line, whole, and the dialog
// is no wider than the screen; on a wide screen the dialog widens to its
// text instead of wrapping at 80 columns.
func TestDialogsFitTheScreen(t *testing.T) {
	const fp = "SHA256:fV3PqRk2yJx0bT9uZc1mN4wLs8hA6dE5gK7iO2pQ3rU"
	p := NewPrompter()
	defer p.Close()
	asked := make(chan PromptMsg, 1)
	p.Attach(func(m tea.Msg) { pm := m.(PromptMsg); asked <- pm; pm.Reply <- "no" })
	if _, err := p.ConfirmHostKey("[127.0.0.1]:56001", fp, "ssh-ed25519"); err != nil {
		t.Fatal(err)
	}
	q := <-asked
	for _, w := range []int{60, 80, 120, 160} {
		m, _ := newModel(newFake(), w, 30, Config{})
		m = step(m, PromptMsg{Text: q.Text, Reply: make(chan string, 1)})
		scr := screen(m)
		if !strings.Contains(scr, fp) {
			t.Errorf("at %d columns the fingerprint is split:\n%s", w, scr)
		}
		for _, l := range strings.Split(scr, "\n") {
			if strings.Contains(l, "│") && ansi.StringWidth(l) > w { // the dialog's lines
				t.Errorf("at %d columns a line is %d wide: %q", w, ansi.StringWidth(l), l)
			}
		}
		if w == 160 && !strings.Contains(scr, "fingerprint is "+fp+". Trust it") {
			t.Errorf("at 160 columns the question still wraps as if the screen were 80 wide:\n%s", scr)
		}
	}
}
