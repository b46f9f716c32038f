package tui

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// Every key of every binding reaches Update as the binding expects: the
// test's key presses read as the keymap spells them.
func TestEveryBindingKeyIsPressable(t *testing.T) {
	km := newKeyMap(false)
	for _, b := range append(km.all(), km.Yes, km.Enter, km.Cancel, km.Backspace) {
		for _, k := range b.Keys() {
			if got := press(k).String(); got != k {
				t.Errorf("%s: key %q reads as %q", b.short, k, got)
			}
		}
	}
}

// keysModel is a model with 200 worker-log lines, one of them an error, and
// the log pane focused.
func keysModel(t *testing.T, cfg Config) (Model, *fake) {
	t.Helper()
	f := newFake()
	f.snap = running()
	for i := 0; i < 200; i++ {
		line := fmt.Sprintf("%d/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h", i)
		if i == 50 {
			line = "Traceback (most recent call last):"
		}
		f.worker = append(f.worker, line)
	}
	m, _ := newModel(f, 120, 40, cfg)
	return m, f
}

// Each binding's keys do its one thing (gh-dash style: one small Update
// test per binding, every key of it).
func TestEachBindingDoesItsAction(t *testing.T) {
	km := newKeyMap(false)
	type check func(t *testing.T, before, after Model, f *fake)
	cases := []struct {
		b     binding
		setup func(Model) Model
		check check
	}{
		{km.Down, nil, func(t *testing.T, b, a Model, _ *fake) {
			if a.sel != b.sel+1 {
				t.Errorf("sel %d → %d", b.sel, a.sel)
			}
		}},
		{km.Up, func(m Model) Model { m.sel = 3; return m }, func(t *testing.T, b, a Model, _ *fake) {
			if a.sel != 2 {
				t.Errorf("sel %d → %d", b.sel, a.sel)
			}
		}},
		{km.PageDown, func(m Model) Model { m.logs.follow, m.logs.top = false, 0; return m }, func(t *testing.T, b, a Model, _ *fake) {
			if a.logs.top != 10 || a.logs.follow {
				t.Errorf("top %d follow %v", a.logs.top, a.logs.follow)
			}
		}},
		{km.PageUp, nil, func(t *testing.T, b, a Model, _ *fake) {
			if a.logs.follow || a.logs.top != a.logs.lastTop()-10 {
				t.Errorf("top %d (last %d) follow %v", a.logs.top, a.logs.lastTop(), a.logs.follow)
			}
		}},
		{km.Pane, nil, func(t *testing.T, b, a Model, _ *fake) {
			if a.focus == b.focus {
				t.Errorf("focus stays %d", a.focus)
			}
		}},
		{km.Tabs, nil, nil}, // below: each key its own tab
		{km.Search, nil, func(t *testing.T, b, a Model, _ *fake) {
			if a.input == nil || !strings.Contains(screen(a), "Search the log:") {
				t.Errorf("no search input:\n%s", screen(a))
			}
		}},
		{km.Next, func(m Model) Model { m.logs.find("ETA"); m.logs.cur = 0; return m }, func(t *testing.T, b, a Model, _ *fake) {
			if a.logs.cur != 1 {
				t.Errorf("match %d → %d", b.logs.cur, a.logs.cur)
			}
		}},
		{km.Prev, func(m Model) Model { m.logs.find("ETA"); m.logs.cur = 1; return m }, func(t *testing.T, b, a Model, _ *fake) {
			if a.logs.cur != 0 {
				t.Errorf("match %d → %d", b.logs.cur, a.logs.cur)
			}
		}},
		{km.Error, nil, func(t *testing.T, b, a Model, _ *fake) {
			if a.logs.follow || a.logs.top > 50 || a.logs.top+a.logs.height <= 50 {
				t.Errorf("line 50 not shown: top %d height %d", a.logs.top, a.logs.height)
			}
		}},
		{km.Follow, nil, func(t *testing.T, b, a Model, _ *fake) {
			if a.logs.follow == b.logs.follow {
				t.Errorf("follow stays %v", a.logs.follow)
			}
		}},
		{km.Wrap, nil, func(t *testing.T, b, a Model, _ *fake) {
			if a.logs.wrap == b.logs.wrap {
				t.Errorf("wrap stays %v", a.logs.wrap)
			}
		}},
		{km.Launch, nil, dialogSays("Launch the worker on")},
		{km.Kill, nil, dialogSays("Kill worker pid 4242")},
		{km.Resume, nil, dialogSays("Resume the worker on")},
		{km.Restart, func(m Model) Model { m.sel = 2; return m }, dialogSays(`Restart with "B3_magicoder" first?`)},
		{km.Reconnect, nil, func(t *testing.T, b, a Model, f *fake) {
			if a.gen != b.gen+1 || !a.polling {
				t.Errorf("gen %d → %d, polling %v", b.gen, a.gen, a.polling)
			}
		}},
		{km.Runs, func(m Model) Model { m.sel = 2; return m }, func(t *testing.T, b, a Model, _ *fake) {
			if !a.runs || !strings.Contains(screen(a), "Run history of B3_magicoder") {
				t.Errorf("no run history:\n%s", screen(a))
			}
		}},
		{km.Servers, func(m Model) Model { m.snap.Server.Latency = sampleLatency(); return m }, func(t *testing.T, b, a Model, _ *fake) {
			if a.serverWide == b.serverWide || !strings.Contains(screen(a), "p99") {
				t.Errorf("wide %v → %v:\n%s", b.serverWide, a.serverWide, screen(a))
			}
		}},
		{km.Stop, func(m Model) Model { return step(step(m, press("L")), press("y")) }, func(t *testing.T, b, a Model, _ *fake) {
			// (b shares a's busy map: the model is a value, its map is not)
			if b.actionID != 1 || len(a.busy) != 0 || a.quitMsg != "" || strings.Contains(screen(a), "launching…") ||
				!strings.Contains(screen(a), "⚠ launch cancelled after 0s: the worker may have started anyway") {
				t.Errorf("action %d, busy %d, quit %q:\n%s", b.actionID, len(a.busy), a.quitMsg, screen(a))
			}
		}},
		{km.Help, func(m Model) Model {
			m.conn.Reader, m.conn.AgentProtocol = "go agent /opt/sw\x1b]0;x\x07", "synthwatch-agent/6"
			return m
		}, func(t *testing.T, b, a Model, _ *fake) {
			// which agent reads the host, sanitised (its path is the host's text)
			if sc := screen(a); !a.help || !strings.Contains(sc, "Keys") || !strings.Contains(sc, "host read by: go agent /opt/sw") || !strings.Contains(sc, " · synthwatch-agent/6") || strings.Contains(sc, "\x1b]0") {
				t.Errorf("no help, or no reader:\n%s", sc)
			}
		}},
		{km.Notes, func(m Model) Model {
			m.result = "cannot connect: the host key changed; if you expect it, run: ssh-keygen -R '[127.0.0.1]:2222' -f /home/someone/.ssh/known_hosts_of_a_long_name then press C"
			return m
		}, func(t *testing.T, b, a Model, _ *fake) {
			// the header cuts it and says m; the box has it whole, the command unsplit
			sb, sa := screen(b), screen(a)
			if !strings.Contains(sb, "… (m)") || !a.notesOpen || !strings.Contains(strings.Join(strings.Fields(sa), " "), "ssh-keygen -R '[127.0.0.1]:2222'") || !strings.Contains(sa, "known_hosts_of_a_long_name") {
				t.Errorf("header:\n%s\nbox:\n%s", sb, sa)
			}
		}},
		{km.Redraw, nil, unchanged},
		{km.Suspend, nil, unchanged},
		{km.Quit, nil, func(t *testing.T, b, a Model, _ *fake) {
			if a.quitMsg == "" {
				t.Error("no quit message")
			}
		}},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.b.short] = true
		for _, k := range c.b.Keys() {
			t.Run(c.b.short+"/"+k, func(t *testing.T) {
				m, f := keysModel(t, Config{})
				if c.setup != nil {
					m = c.setup(m)
				}
				if c.b.short == "page down" || c.b.short == "page up" || c.b.short == "error" || c.b.short == "next" || c.b.short == "previous" {
					m.focus = focusLog
				}
				nm, cmd := m.Update(press(k))
				a := nm.(Model)
				if c.b.short == "quit" {
					if cmd == nil || !isQuit(cmd) {
						t.Errorf("%s did not quit", k)
					}
				}
				if want := map[string]tea.Msg{"redraw": tea.ClearScreen(), "suspend": tea.Suspend()}[c.b.short]; want != nil {
					if cmd == nil || cmd() != want {
						t.Errorf("%s: want the command that sends %T", k, want)
					}
				}
				if c.b.short == "log tabs" {
					if want := int(k[0] - '1'); a.logs.tab != want || !a.logs.follow {
						t.Errorf("tab %d, want %d", a.logs.tab, want)
					}
					return
				}
				c.check(t, m, a, f)
			})
		}
	}
	for _, b := range km.all() {
		if !covered[b.short] {
			t.Errorf("binding %q has no test", b.short)
		}
	}
}

func dialogSays(text string) func(t *testing.T, b, a Model, _ *fake) {
	return func(t *testing.T, b, a Model, _ *fake) {
		if a.dialog == nil || !strings.Contains(screen(a), text) {
			t.Errorf("no dialog %q:\n%s", text, screen(a))
		}
	}
}

// In a read-only session the control bindings are disabled: their keys do
// nothing, the footer says read-only and lists none of them, and the help
// box says they are off.
func TestReadOnlyDisablesTheControlKeys(t *testing.T) {
	m, f := keysModel(t, Config{ReadOnly: true})
	for _, b := range m.keys.control() {
		if b.Enabled() {
			t.Errorf("%s enabled", b.short)
		}
		for _, k := range b.Keys() {
			nm, cmd := m.Update(press(k))
			a := nm.(Model)
			if a.dialog != nil || cmd != nil || len(a.busy) != 0 {
				t.Errorf("read-only %s: dialog %v cmd %v", k, a.dialog, cmd != nil)
			}
			a = step(a, press("y")) // and no dialog to confirm
			if len(f.launched)+len(f.killed)+len(f.restart) != 0 {
				t.Fatalf("read-only %s acted", k)
			}
		}
	}
	for _, w := range []int{80, 120, 200} {
		m = step(m, teaSize(w, 50))
		foot := ansi.Strip(m.footer(w))
		if !strings.HasPrefix(foot, "read-only · ") {
			t.Errorf("footer at %d: %q", w, foot)
		}
		for _, b := range m.keys.control() {
			if strings.Contains(foot, b.Help().Key+" "+b.short) {
				t.Errorf("footer at %d lists %s: %q", w, b.short, foot)
			}
		}
	}
	m = step(m, press("?"))
	scr := screen(m)
	if !strings.Contains(scr, "read-only session: L K r R") || strings.Contains(scr, m.keys.Kill.Help().Desc) {
		t.Errorf("help box:\n%s", scr)
	}
}

// The footer is ShortHelp, in order, at every width; the help box is
// FullHelp, every row (pgup and pgdown included, which the old box forgot).
func TestFooterAndHelpBoxComeFromTheKeymap(t *testing.T) {
	for _, w := range []int{80, 119, 120, 159, 160, 179, 180, 200} {
		m, _ := newModel(newFake(), w, 50, Config{})
		var want []string
		for _, b := range m.keys.ShortHelp(w) {
			want = append(want, b.Help().Key+" "+b.short)
		}
		if got := strings.TrimRight(ansi.Strip(m.footer(w)), " "); got != strings.Join(want, " · ") {
			t.Errorf("footer at %d:\n got %q\nwant %q", w, got, strings.Join(want, " · "))
		}
	}
	m, _ := newModel(newFake(), 120, 50, Config{})
	m = step(m, press("?"))
	scr := screen(m)
	n := 0
	for _, g := range m.keys.FullHelp() {
		for _, b := range g {
			n++
			if !strings.Contains(scr, b.Help().Desc) {
				t.Errorf("help box lacks %q:\n%s", b.Help().Desc, scr)
			}
		}
	}
	if n != len(m.keys.all()) {
		t.Errorf("help box has %d rows, keymap %d bindings", n, len(m.keys.all()))
	}
	for _, k := range []string{"pgup", "pgdown"} {
		if !strings.Contains(scr, k) {
			t.Errorf("help box lacks %s", k)
		}
	}
}

// The README's key list is the keymap's (KeyList), between its markers.
func TestReadmeListsEveryBinding(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	const open, end = "<!-- keys: from tui.KeyList, checked by TestReadmeListsEveryBinding -->\n", "<!-- /keys -->"
	i, j := strings.Index(s, open), strings.Index(s, end)
	want := strings.Join(KeyList(), "\n") + "\n"
	if i < 0 || j < i {
		t.Fatalf("README.md has no key list between %q and %q; it should be:\n%s", open, end, want)
	}
	if got := s[i+len(open) : j]; got != want {
		t.Errorf("README.md's key list differs from the keymap; it should be:\n%s", want)
	}
	for _, b := range newKeyMap(false).all() {
		for _, k := range b.Keys() {
			if !strings.Contains(s[i:j], "`"+k+"`") {
				t.Errorf("README lacks key %q (%s)", k, b.short)
			}
		}
	}
}

// unchanged: the key's work is its command (checked above); the screen
// stays as it was.
func unchanged(t *testing.T, b, a Model, _ *fake) {
	if screen(a) != screen(b) {
		t.Errorf("the screen changed:\n%s", screen(a))
	}
}

// In --read-only a key that would change the host says so in the footer
// for a moment, rather than doing nothing without a word; then the footer
// is the keys again.
func TestReadOnlyKeySaysSo(t *testing.T) {
	m, c := newModel(newFake(), 120, 30, Config{ReadOnly: true})
	for _, k := range []string{"L", "K", "r", "R"} {
		a := step(m, press(k))
		if a.dialog != nil || !strings.Contains(screen(a), k+" (") || !strings.Contains(screen(a), "is off: --read-only") {
			t.Errorf("%s in read-only:\n%s", k, screen(a))
		}
		c.t = c.t.Add(5 * time.Second)
		if a = step(a, tickMsg(c.t)); strings.Contains(screen(a), "is off") {
			t.Errorf("the word outlived its moment:\n%s", screen(a))
		}
		c.t = t0
	}
}

// Back from ctrl+z the screen is cleared and repainted and a poll starts:
// the figures are as old as the suspension.
func TestResumeRepaintsAndPolls(t *testing.T) {
	m, _ := newModel(newFake(), 120, 30, Config{})
	nm, cmd := m.Update(tea.ResumeMsg{})
	a := nm.(Model)
	if !a.polling || a.gen != m.gen+1 || cmd == nil {
		t.Fatalf("no poll after resume: polling %v gen %d→%d", a.polling, m.gen, a.gen)
	}
	b, ok := cmd().(tea.BatchMsg) // the clear first; the poll (second) would call the backend
	if !ok || len(b) == 0 || b[0] == nil || b[0]() != tea.ClearScreen() {
		t.Error("no clear screen after resume")
	}
}

func isQuit(cmd tea.Cmd) bool {
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

// On a low screen the help box still fits, whole: every binding's word in
// columns, and the hint that closes it.
func TestHelpBoxFitsA24RowScreen(t *testing.T) {
	for _, ro := range []bool{false, true} {
		m, _ := newModel(newFake(), 80, 24, Config{ReadOnly: ro})
		m = step(m, press("?"))
		scr := screen(m)
		if !strings.Contains(scr, "any key: close") || !strings.Contains(scr, "╰") {
			t.Fatalf("read-only %v: the box is cut:\n%s", ro, scr)
		}
		for _, g := range m.keys.FullHelp() {
			for _, b := range g {
				if !strings.Contains(scr, b.short) {
					t.Errorf("read-only %v: no %q:\n%s", ro, b.short, scr)
				}
			}
		}
		if ro != strings.Contains(scr, "read-only: L K r R are off") {
			t.Errorf("read-only %v:\n%s", ro, scr)
		}
	}
}

// A stale snapshot (the link down: the worker's state unknown) offers no
// action: every dialog says there is no contact, and yes does nothing
// (found by an adversarial trial: K said "No worker is running.").
func TestNoActionWithoutContact(t *testing.T) {
	km := newKeyMap(false)
	for _, b := range []binding{km.Launch, km.Kill, km.Resume, km.Restart} {
		m, f := keysModel(t, Config{})
		m.sel = 2
		m.snap.Worker.State = snapshot.WorkerUnknown
		m.snap.Connection.State = snapshot.LinkReconnecting
		m = step(m, press(b.Keys()[0]))
		if m.dialog == nil || !strings.Contains(screen(m), "No contact with") {
			t.Fatalf("%s: no dialog saying so:\n%s", b.short, screen(m))
		}
		nm, cmd := m.Update(press("y"))
		if cmd != nil || nm.(Model).actionID != m.actionID || len(f.killed)+len(f.launched) != 0 {
			t.Errorf("%s: yes acted: killed %v, launched %v", b.short, f.killed, f.launched)
		}
	}
}

// The help box on a short terminal (its compact columns) still names the
// agent that reads the host, sanitised and cut to the box.
func TestCompactHelpNamesTheReader(t *testing.T) {
	m, _ := keysModel(t, Config{})
	m = step(m, teaSize(100, 16))
	m.conn.Reader = "go agent /opt/sw\x1b]0;x\x07"
	m = step(m, press("?"))
	sc := screen(m)
	if !m.help || !strings.Contains(sc, "read by: go agent /opt/sw") || strings.Contains(sc, "\x1b]0") {
		t.Fatalf("compact help without the reader:\n%s", sc)
	}
}
