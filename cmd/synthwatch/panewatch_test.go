package main

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// paneReader captures tmux panes through one control-mode client: a
// capture is a line to the tmux server, not a tmux process. A benchmark
// that read a screen every 5 ms by running `tmux capture-pane` took
// about a third of a core of a 2-core machine from what it timed (a cold
// status's fallback exec took 550 ms beside such a loop, 390 without it).
type paneReader struct {
	mu      sync.Mutex
	c       *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	session string
}

// newPaneReader starts the client in a session of its own, which the
// panes it reads are not.
func newPaneReader(tb testing.TB) *paneReader {
	tb.Helper()
	p := &paneReader{session: fmt.Sprintf("swwatch%d", time.Now().UnixNano())}
	p.c = tmuxCmd("-C", "new-session", "-s", p.session, "sleep", "3600")
	var err error
	if p.in, err = p.c.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	out, err := p.c.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p.out = bufio.NewReaderSize(out, 64<<10)
	if err := p.c.Start(); err != nil {
		tb.Fatalf("tmux -C: %v", err)
	}
	tb.Cleanup(func() {
		tmuxCmd("kill-session", "-t", p.session).Run()
		p.in.Close()
		p.c.Wait()
	})
	// the blocks before this one's answer the client's own start
	const mark = "swwatch-synced"
	if _, err := io.WriteString(p.in, "display-message -p "+mark+"\n"); err != nil {
		tb.Fatalf("tmux -C: %v", err)
	}
	for {
		got, err := p.block()
		if err != nil {
			tb.Fatalf("tmux -C: %v", err)
		}
		if strings.TrimSpace(got) == mark {
			return p
		}
	}
}

// capture is the text of the pane of target, as capture-pane -p prints it.
func (p *paneReader) capture(target string) (string, error) {
	return p.command("capture-pane -p -t " + target)
}

// command sends one command and reads the block of output that answers
// it: the lines between "%begin" and the "%end" (or "%error") of the same
// time and number, which a pane's line cannot fake; notifications between
// blocks are skipped.
func (p *paneReader) command(cmd string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.in, cmd+"\n"); err != nil {
		return "", err
	}
	// a wedged tmux ends the client, and so the read: a benchmark fails
	// rather than outlasting its own minute's guard
	wedged := time.AfterFunc(30*time.Second, func() { p.c.Process.Kill() })
	defer wedged.Stop()
	out, err := p.block()
	if err != nil {
		return "", fmt.Errorf("%s: %w", cmd, err)
	}
	return out, nil
}

// block reads the next block of output.
func (p *paneReader) block() (string, error) {
	var b strings.Builder
	id := "" // "TIME NUMBER FLAGS" of the %begin: its %end says the same
	for {
		line, err := p.out.ReadString('\n')
		if err != nil {
			return "", err
		}
		switch {
		case id == "":
			if rest, ok := strings.CutPrefix(line, "%begin "); ok {
				id = rest
			}
		case line == "%end "+id:
			return b.String(), nil
		case line == "%error "+id:
			return "", fmt.Errorf("tmux: %s", strings.TrimSpace(b.String()))
		default:
			b.WriteString(line)
		}
	}
}

// The reader sees what a pane shows, as capture-pane does, and each
// answer is its own command's.
func TestPaneReader(t *testing.T) {
	needTmux(t)
	p := newPaneReader(t)
	session := fmt.Sprintf("swpr%d", time.Now().UnixNano())
	if out, err := tmuxCmd("new-session", "-d", "-s", session, "-x", "80", "-y", "10", "sh", "-c", "printf 'first line\\n%%end 1 2 3\\nlast\\n'; exec sleep 60").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	defer tmuxCmd("kill-session", "-t", session).Run()
	var got string
	for range 400 {
		s, err := p.capture(session)
		if err != nil {
			t.Fatal(err)
		}
		if got = s; strings.Contains(s, "last") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	want, _ := tmuxCmd("capture-pane", "-p", "-t", session).Output()
	if got != string(want) {
		t.Fatalf("control mode read\n%q\ncapture-pane printed\n%q", got, want)
	}
	if s, err := p.capture("%999999"); err == nil {
		t.Fatalf("a capture of no pane gave no error: %q", s)
	}
	if s, err := p.command("display-message -p after"); err != nil || strings.TrimSpace(s) != "after" {
		t.Fatalf("the answer after an error: %q %v", s, err)
	}
}
