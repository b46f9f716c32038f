package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
	"github.com/synthwatch/synthwatch/tui"
	"golang.org/x/crypto/ssh/knownhosts"
)

// holeRoot is a pipeline root with one category and a worker log.
func holeRoot(t testing.TB) string {
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B1_hole")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(strings.Repeat(`{"id":1}`+"\n", 10)), 0o644)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte("B1_hole: 10 prompts\nneedle in the log\n"), 0o644)
	return root
}

// proxied is a real sshd behind a fault proxy, dialled through it with
// keepalives off, so a black-holed link blocks reads until their deadline
// instead of being dropped.
func proxied(t testing.TB) (*remote.SSH, *faultproxy.Proxy) {
	t.Helper()
	s := sshdtest.Start(t)
	px, err := faultproxy.Start(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	kh := filepath.Join(t.TempDir(), "kh")
	os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(px.Addr())}, s.HostKey)+"\n"), 0o600)
	h, err := remote.Dial(context.Background(), remote.Options{Target: s.User + "@" + px.Addr(), Identities: []string{s.KeyPath}, Home: t.TempDir(),
		Opts: []string{"IdentityAgent=none", "UserKnownHostsFile=" + kh, "StrictHostKeyChecking=yes", "ServerAliveInterval=3600", "ConnectTimeout=5"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(h, 2*time.Second) })
	return h, px
}

func keyPress(s string) tea.KeyPressMsg {
	switch s {
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	}
	return tea.KeyPressMsg{Code: []rune(s)[0], Text: s}
}

func send(m tea.Model, msg tea.Msg) (tea.Model, tea.Cmd) { return m.Update(msg) }

func view(m tea.Model) string { return ansi.Strip(m.View().Content) }

// BenchmarkKeyLatencyBlackholed: the time from a key message to the
// changed view (Update, then View) of the real model, over a real sshd
// whose link is black-holed while a poll and a launch block on it. Each
// kind alternates two keys that each change the view (open, close). The
// poll must still be blocked at the end, or the figures prove nothing.
func BenchmarkKeyLatencyBlackholed(b *testing.B) {
	h, px := proxied(b)
	root := holeRoot(b)
	live := &Live{Name: "hole", Remote: h, Grace: time.Second, Actor: actions.Actor{H: h, Root: root},
		Watcher: pipeline.NewWatcher(h, pipeline.Options{Host: "hole", Root: root, ServerURL: "http://127.0.0.1:1"}, nil)}
	m := tea.Model(tui.New(live, tui.Config{PollEvery: time.Hour, Plain: true}))
	m, _ = send(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	m, _ = send(m, tui.PollResult(m, live.Poll(b.Context()), live)) // one snapshot before the link goes black
	if !strings.Contains(view(m), "B1_hole") {
		b.Fatalf("no first snapshot:\n%s", view(m))
	}
	px.SetMode(faultproxy.BlackHole)
	polled := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		live.Poll(ctx)
		close(polled)
	}()
	m, _ = send(m, keyPress("L"))
	m, launch := send(m, keyPress("y"))
	go launch() // what the program does with an action's Cmd: it blocks on the link
	if !strings.Contains(view(m), "launching…") {
		b.Fatalf("no launch running:\n%s", view(m))
	}
	kinds := []struct {
		name       string
		keys       [2]string
		want, back string
	}{
		{"help", [2]string{"?", "x"}, "this help", "B1_hole"},
		{"tab", [2]string{"2", "1"}, "2 server log", "needle in the log"},
		{"search", [2]string{"/", "esc"}, "Search the log:", "B1_hole"},
		{"confirm", [2]string{"K", "n"}, "No worker is running.", "B1_hole"},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			for i, want := range []string{k.want, k.back} { // each key changes the view
				m, _ = send(m, keyPress(k.keys[i]))
				if !strings.Contains(view(m), want) {
					b.Fatalf("%s: %q not on screen:\n%s", k.name, want, view(m))
				}
			}
			i := 0
			start := time.Now()
			for b.Loop() {
				m, _ = send(m, keyPress(k.keys[i%2]))
				_ = m.View()
				i++
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/1e6/float64(i), "ms/key")
		})
	}
	b.Run("quit", func(b *testing.B) {
		start, n := time.Now(), 0
		for b.Loop() {
			q, cmd := send(m, keyPress("q"))
			_ = q.View()
			if cmd == nil {
				b.Fatal("q gave no command")
			}
			n++
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/1e6/float64(n), "ms/key")
		if _, cmd := send(m, keyPress("q")); cmd == nil {
			b.Fatal("no quit")
		} else if _, ok := cmd().(tea.QuitMsg); !ok {
			b.Fatal("q did not quit")
		}
	})
	b.Run("cancel", func(b *testing.B) { // esc cancels the oldest task: first the blocked launch
		var d time.Duration
		n := 0
		for b.Loop() {
			b.StopTimer()
			if n > 0 {
				m, _ = send(m, keyPress("L"))
				m, _ = send(m, keyPress("y")) // a task; its Cmd is not run
			}
			b.StartTimer()
			t0 := time.Now()
			m, _ = send(m, keyPress("esc"))
			s := m.View()
			d += time.Since(t0)
			if n == 0 && !strings.Contains(ansi.Strip(s.Content), "launch cancelled after") {
				b.Fatalf("esc did not cancel:\n%s", ansi.Strip(s.Content))
			}
			n++
		}
		b.ReportMetric(float64(d.Nanoseconds())/1e6/float64(n), "ms/key")
	})
	select {
	case <-polled:
		b.Fatal("the poll returned during the run: the link was not black-holed throughout")
	default:
	}
}

// A link close that blocks does not keep a quitting dashboard: it is left
// to the exit, and said.
func TestCloseWithinLeavesABlockedClose(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	err := closeWithin(closer(func() error { <-release; return nil }), 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "still blocked after 50ms") {
		t.Fatalf("blocked close: %v", err)
	}
	if err := closeWithin(closer(func() error { return nil }), time.Minute); err != nil {
		t.Fatalf("quick close: %v", err)
	}
	boom := errors.New("boom")
	if err := closeWithin(closer(func() error { return boom }), time.Minute); !errors.Is(err, boom) {
		t.Fatalf("failed close: %v", err)
	}
}

type closer func() error

func (c closer) Close() error { return c() }

// The real binary in tmux, over a real sshd behind a black-holed proxy,
// with a worker running: while polls and a launch block on the link,
// help, a log tab, search, the kill dialog and cancelling the launch all
// answer, in order; quit ends the program, says what was left
// unconfirmed, and the worker keeps running. Deadlines bound a hang only.
func TestBlackholedLinkKeysAnswerInTmux(t *testing.T) {
	testgate.E2E(t)
	needTmux(t)
	bin := testbin.Path(t)
	srv := sim.New(sim.Options{Speed: 2})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := nightRoot(t, srv.URL(), 100_000)
	pid, err := actions.Actor{H: remote.Local{}, Root: root, WorkerBin: bin}.Launch(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-pid, syscall.SIGKILL)
	s := sshdtest.Start(t)
	px, err := faultproxy.Start(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	kh := filepath.Join(t.TempDir(), "kh")
	os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(px.Addr())}, s.HostKey)+"\n"), 0o600)
	state := t.TempDir()
	x := startTmux(t, 120, 40, []string{"XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + state, "SSH_AUTH_SOCK="},
		"sh", "-c", `"$@"; echo "exit status $?"; sleep 600`, "sh", bin, "-i", s.KeyPath, "-o", "UserKnownHostsFile="+kh,
		"-o", "StrictHostKeyChecking=yes", "-o", "ServerAliveInterval=3600", "--root", root, "--worker-bin", bin,
		"--server-url", srv.URL(), "--poll", "500ms", s.User+"@"+px.Addr())
	x.waitFor("connected, the worker seen", 30*time.Second, func(scr string) bool {
		return strings.Contains(scr, "● connected") && strings.Contains(scr, fmt.Sprintf("worker running pid %d", pid)) && strings.Contains(scr, "req/s")
	})
	px.SetMode(faultproxy.BlackHole)
	x.waitText("last contact", 30*time.Second) // nothing gets through: the polls block
	steps := []struct {
		keys []string
		what string
		ok   func(string) bool
	}{
		{[]string{"L"}, "launch dialog", has("Launch the worker on")},
		{[]string{"y"}, "launch running", has("launching…")},
		{[]string{"?"}, "help", has("this help")},
		{[]string{"x"}, "help closed", not(has("this help"))},
		{[]string{"3"}, "events tab", not(has("req/s"))},
		{[]string{"1"}, "worker log tab", has("req/s")},
		{[]string{"/"}, "search box", has("Search the log:")},
		{[]string{"r", "e", "q", "/", "s", "Enter"}, "search done", has("/req/s (")},
		{[]string{"K"}, "kill dialog", has(fmt.Sprintf("Kill worker pid %d", pid))},
		{[]string{"n"}, "kill dialog closed", not(has("Kill worker pid"))},
		{[]string{"Escape"}, "launch cancelled", has("launch cancelled after")},
		{[]string{"L"}, "launch dialog again", has("Launch the worker on")},
		{[]string{"y"}, "launch running again", has("launching…")},
	}
	for _, st := range steps {
		x.keys(st.keys...)
		x.waitFor(st.what, 20*time.Second, st.ok)
	}
	x.keys("q")
	x.waitText("launch was still running when you quit", 20*time.Second)
	x.waitText("exit status 0", 20*time.Second)
	if !alive(pid) {
		t.Fatalf("the worker (pid %d) did not survive the dashboard quitting", pid)
	}
}

func has(s string) func(string) bool {
	return func(scr string) bool { return strings.Contains(scr, s) }
}

func not(f func(string) bool) func(string) bool { return func(scr string) bool { return !f(scr) } }
