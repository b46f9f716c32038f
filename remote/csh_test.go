package remote

import (
	"context"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A login shell of csh's (tcsh) ends a command at a newline even inside
// single quotes: the first multi-line command of a link is refused there
// ("Unmatched" and the quote) before sh runs, which teaches the link the shell; it
// runs again with no newline on its line, as every command after it, and
// the agent's launcher, refused alike, starts on its second try.
func TestCshLoginLearntOnce(t *testing.T) {
	t.Parallel()
	var tcsh = sshdtest.Banners[len(sshdtest.Banners)-1]
	if tcsh.Name != "tcsh" {
		t.Fatalf("the last banner shell is %s, want tcsh", tcsh.Name)
	}
	h := bannerHost(t, tcsh.Name, tcsh.Shell, tcsh.RC)
	ctx := context.Background()
	script := "a=one\nb='two three'\nprintf '%s|%s|%s\\n' \"$a\" \"$b\" \"$1\""
	for round := range 2 {
		r, err := h.Exec(ctx, "sh", "-c", script, "x", "it's!")
		if err != nil || r.ExitCode != 0 || string(r.Stdout) != "one|two three|it's!\n" || len(r.Stderr) != 0 {
			t.Fatalf("round %d: %+v %v", round, r, err)
		}
		if !h.LoginCsh() {
			t.Fatalf("round %d: the link did not learn its login shell", round)
		}
	}
	// the launcher of a link that did not know it yet
	h2 := bannerHost(t, tcsh.Name, tcsh.Shell, tcsh.RC)
	ag := NewAgent(h2)
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	if _, err := ag.Run(ctx, loadBatch()); err != nil {
		t.Fatalf("the agent on a csh login: %v", err)
	}
	if k := ag.Kind(); !strings.HasPrefix(k, "go ") || !h2.LoginCsh() {
		t.Fatalf("read by %q, csh learnt %v", k, h2.LoginCsh())
	}
}
