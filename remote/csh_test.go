package remote

import (
	"context"
	"errors"
	"io"
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
	// tcsh in German says it otherwise ("Überflüssiges" and the quote)
	de := map[string]string{}
	for f, body := range tcsh.RC {
		de[f] = "setenv LANG de_DE.UTF-8\n" + body
	}
	hde := bannerHost(t, tcsh.Name, tcsh.Shell, de)
	if r, err := hde.Exec(ctx, "sh", "-c", script, "x", "it's!"); err != nil || string(r.Stdout) != "one|two three|it's!\n" || !hde.LoginCsh() {
		t.Fatalf("tcsh in German: %+v %v, csh learnt %v", r, err, hde.LoginCsh())
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

// Known to be csh's, the launcher goes on stdin and the first request
// stays on the line (as its word), so it is answered without waiting for
// the hello (a round trip on OpenSSH).
func TestCshLaunchKeepsTheRequestOnTheLine(t *testing.T) {
	t.Parallel()
	ag := &Agent{}
	argv := ag.startArgv("~0123456789ab", []byte(strings.Repeat("r", 1200)))
	line, stdin := wireCommand(argv, OpenSSHMaxLine, true, true)
	if strings.Contains(line, "\n") || len(stdin) == 0 {
		t.Fatalf("under csh the launcher's line holds a newline, or nothing went on stdin: %d bytes on stdin", len(stdin))
	}
	if !requestOnTheLine(argv, OpenSSHMaxLine, true) || !strings.Contains(line, argv[7]) {
		t.Fatal("under csh the first request left the line")
	}
}

// cshRefuses is a host whose login shell refused the first launch as csh
// does, and learnt so meanwhile from a command beside it (a fallback's,
// RunEither): the launch still goes again, once, as to a csh login.
type cshRefuses struct {
	csh    bool
	starts []bool // each launch: whether the host knew its shell then
}

func (c *cshRefuses) LoginCsh() bool { return c.csh }
func (c *cshRefuses) NoteLoginCsh()  { c.csh = true }
func (c *cshRefuses) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	c.starts = append(c.starts, c.csh)
	c.csh = true // the fallback beside it was refused too, and taught the host first
	return Local{}.Stream(ctx, stderr, "sh", "-c", "printf '%s\\n' \"Unmatched '''.\" >&2")
}

func TestCshLearntBesideTheLaunchStillRetries(t *testing.T) {
	t.Parallel()
	h := &cshRefuses{}
	ag := &Agent{h: h}
	if _, err := ag.Run(context.Background(), loadBatch()); !errors.Is(err, ErrNoAgent) {
		t.Fatalf("a launch that never ran: %v", err)
	}
	if len(h.starts) != 2 || h.starts[0] || !h.starts[1] {
		t.Fatalf("launches (whether each went as to csh): %v, want [false true]", h.starts)
	}
}
