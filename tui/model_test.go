package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

func press(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+c", "ctrl+l", "ctrl+z":
		return tea.KeyPressMsg{Code: rune(s[5]), Mod: tea.ModCtrl}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	}
	return tea.KeyPressMsg{Code: []rune(s)[0], Text: s}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// newModel is a model at a size with a first snapshot applied.
func newModel(f *fake, w, h int, cfg Config) (Model, *clock) {
	c := &clock{t: t0}
	cfg.Now = c.now
	m := New(f, cfg)
	m = step(m, tea.WindowSizeMsg{Width: w, Height: h})
	m = step(m, tickMsg(t0))
	m = step(m, pollMsg{gen: m.gen, snap: f.snap, worker: f.worker, server: f.server})
	return m, c
}

func step(m Model, msg tea.Msg) Model {
	nm, _ := m.Update(msg)
	return nm.(Model)
}

// run delivers msg and then executes the returned command once, feeding its
// message back (what the program's loop would do for an action).
func run(m Model, msg tea.Msg) (Model, tea.Msg) {
	nm, cmd := m.Update(msg)
	m = nm.(Model)
	if cmd == nil {
		return m, nil
	}
	out := cmd()
	return m, out
}

func screen(m Model) string { return ansi.Strip(m.View().Content) }

func TestStalePollAnswersAreDropped(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, _ := newModel(f, 120, 40, Config{})
	old := m.gen
	m = step(m, press("C")) // reconnect: a new generation
	if f.reconn != 1 || m.gen == old {
		t.Fatalf("reconnect: %d %d", f.reconn, m.gen)
	}
	late := running()
	late.Worker.PID = 1
	m = step(m, pollMsg{gen: old, snap: late})
	if m.snap.Worker.PID != 4242 {
		t.Fatal("a poll answer from the old connection was applied")
	}
	m = step(m, pollMsg{gen: m.gen, snap: late})
	if m.snap.Worker.PID != 1 {
		t.Fatal("the current answer was not applied")
	}
}

// The header's "last contact" follows the polls, not the slow idle tick: a
// live link never looks stale, a silent one does.
func TestLastContactFollowsPolls(t *testing.T) {
	f := newFake()
	f.snap = running()
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0)}
	m, c := newModel(f, 120, 40, Config{PollEvery: time.Second})
	if strings.Contains(screen(m), "rtt") {
		t.Fatalf("an RTT shown before one was measured:\n%s", screen(m))
	}
	for i := 1; i <= 6; i++ { // six polls a second apart, no tick in between
		c.t = t0.Add(time.Duration(i) * time.Second)
		f.conn.LastContact, f.conn.RTTms = tp(c.t), 2
		m = step(m, pollMsg{gen: m.gen, snap: f.snap})
	}
	if scr := screen(m); strings.Contains(scr, "last contact") || !strings.Contains(scr, "rtt 2ms") {
		t.Fatalf("a live link looks stale:\n%s", scr)
	}
	c.t = c.t.Add(10 * time.Second) // no answer since
	m = step(m, tickMsg(c.t))
	if scr := screen(m); !strings.Contains(scr, "last contact 10s ago") {
		t.Fatalf("a silent link looks live:\n%s", scr)
	}
}

func TestKillDialogFixesThePidAndDefaultsToNo(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, _ := newModel(f, 120, 40, Config{})
	m = step(m, press("K"))
	if m.dialog == nil || !strings.Contains(screen(m), "Kill worker pid 4242") {
		t.Fatalf("no dialog:\n%s", screen(m))
	}
	m = step(m, press("n"))
	if m.dialog != nil || len(f.killed) != 0 {
		t.Fatal("n did not cancel")
	}
	m = step(m, press("K"))
	m = step(m, press("enter")) // not yes: no
	if len(f.killed) != 0 {
		t.Fatal("enter killed")
	}
	m = step(m, press("K"))
	changed := running()
	changed.Worker.PID = 9999 // a new worker appears while the dialog is open
	m = step(m, pollMsg{gen: m.gen, snap: changed})
	m, msg := run(m, press("y"))
	if len(f.killed) != 1 || f.killed[0] != 4242 {
		t.Fatalf("killed %v, want the pid shown when the dialog opened", f.killed)
	}
	if !strings.Contains(screen(m), "killing pid 4242… 0s, esc to cancel") {
		t.Errorf("no spinner while the action runs:\n%s", screen(m))
	}
	m = step(m, msg)
	if !strings.Contains(screen(m), "✓ kill: pid 4242 gone") {
		t.Errorf("result not shown:\n%s", screen(m))
	}
}

func TestActionFailureIsShown(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, _ := newModel(f, 120, 40, Config{})
	m.busy[7] = task{id: 7, what: "launch", doing: "launching"}
	m = step(m, actionMsg{id: 7, what: "launch", err: os.ErrPermission})
	if !strings.Contains(screen(m), "✖ launch failed: permission denied") {
		t.Fatalf("%s", screen(m))
	}
	m = step(m, actionMsg{id: 99, what: "ghost", err: os.ErrPermission})
	if strings.Contains(screen(m), "ghost") {
		t.Fatal("an unknown action result was shown")
	}
}

func TestRestartAndLaunchAndReadOnly(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, _ := newModel(f, 120, 40, Config{})
	m = step(m, press("j"))
	m = step(m, press("j"))
	m = step(m, press("R"))
	if !strings.Contains(screen(m), `Restart with "B3_magicoder" first?`) {
		t.Fatalf("%s", screen(m))
	}
	m, _ = run(m, press("y"))
	if len(f.restart) != 1 || f.restart[0] != "B3_magicoder" {
		t.Fatalf("restart %v", f.restart)
	}
	m = step(m, press("L"))
	_, _ = run(m, press("y"))
	if len(f.launched) != 1 {
		t.Fatal("launch")
	}
	ro, _ := newModel(f, 120, 40, Config{ReadOnly: true})
	for _, k := range []string{"L", "K", "r", "R"} {
		ro = step(ro, press(k))
		if ro.dialog != nil {
			t.Fatalf("read-only %s opened a dialog", k)
		}
	}
	if s := screen(ro); strings.Contains(s, "L launch") || strings.Contains(s, "K kill") {
		t.Fatalf("read-only help shows control keys:\n%s", s)
	}
	ro = step(ro, press("?"))
	if s := screen(ro); strings.Contains(s, "kill the worker") || !strings.Contains(s, "reconnect now") {
		t.Fatalf("read-only full help:\n%s", s)
	}
}

func TestSearchFollowWrapAndErrors(t *testing.T) {
	f := newFake()
	f.snap = running()
	for i := 0; i < 200; i++ {
		f.worker = append(f.worker, "50/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h")
	}
	f.worker[40] = "Traceback (most recent call last):"
	f.worker[120] = "B3_magicoder: 10000 prompts"
	f.worker[150] = "B4_metamath: 10000 prompts"
	m, _ := newModel(f, 120, 40, Config{})
	m = step(m, press("/"))
	for _, r := range "prompts" {
		m = step(m, press(string(r)))
	}
	m = step(m, press("enter"))
	if len(m.logs.matches) != 2 || !strings.Contains(screen(m), "/prompts (1/2)") {
		t.Fatalf("search: %v\n%s", m.logs.matches, screen(m))
	}
	if m.logs.follow || m.logs.top > 120 {
		t.Fatalf("search did not show the first match: top %d", m.logs.top)
	}
	m = step(m, press("n"))
	if m.logs.cur != 1 || !strings.Contains(screen(m), "(2/2)") {
		t.Fatalf("n: cur %d", m.logs.cur)
	}
	m = step(m, press("N"))
	if m.logs.cur != 0 {
		t.Fatalf("N: cur %d", m.logs.cur)
	}
	m = step(m, press("f"))
	if !m.logs.follow {
		t.Fatal("f did not resume following")
	}
	m = step(m, press("e"))
	if m.logs.follow || !strings.Contains(screen(m), "Traceback") {
		t.Fatalf("e: %s", screen(m))
	}
	m = step(m, press("w"))
	if !m.logs.wrap || !strings.Contains(screen(m), "wrap") {
		t.Fatal("w")
	}
	m = step(m, press("3"))
	if m.logs.tab != 2 {
		t.Fatal("tab 3")
	}
}

// Quitting says what is really left on the host.
func TestQuitStatesTheWorkersRealState(t *testing.T) {
	up := snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0.Add(-time.Second))}
	refused := "dial tcp 127.0.0.1:1: connect: connection refused"
	for _, c := range []struct {
		name string
		conn snapshot.Connection
		snap func() snapshot.Snapshot
		want string
	}{
		{"running", up, running, "synthwatch: the worker keeps running on root@10.1.230.174 (pid 4242, B3_magicoder)"},
		{"stalled", up, func() snapshot.Snapshot { s := running(); s.Worker.State = snapshot.WorkerStalled; return s },
			"synthwatch: the worker keeps running on root@10.1.230.174 (pid 4242, B3_magicoder)"},
		{"none", up, func() snapshot.Snapshot {
			s := running()
			s.Worker = snapshot.Worker{State: "stopped", PID: 4242, Source: "worker.json"}
			return s
		}, "synthwatch: no worker is running on root@10.1.230.174 (worker stopped)"},
		{"never reached", snapshot.Connection{State: snapshot.LinkReconnecting, Attempt: 4, Error: refused},
			func() snapshot.Snapshot {
				return snapshot.Snapshot{Connection: snapshot.Connection{State: "reconnecting", Error: refused}, Worker: snapshot.Worker{State: "unknown"}}
			}, "synthwatch: root@10.1.230.174 was never reached; nothing there was read or changed (last error: " + refused + ")"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			f.snap, f.conn = c.snap(), c.conn
			m, _ := newModel(f, 80, 24, Config{})
			nm, cmd := m.Update(press("q"))
			if cmd == nil || cmd() != tea.Quit() {
				t.Fatal("q did not quit")
			}
			if got := nm.(Model).QuitMessage(); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// A link that went down after a poll: the last state read, and when.
func TestQuitWhileTheLinkIsDown(t *testing.T) {
	f := newFake()
	f.snap = running()
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0)}
	m, _ := newModel(f, 80, 24, Config{})
	f.conn = snapshot.Connection{State: snapshot.LinkReconnecting, Attempt: 2, LastContact: tp(t0), Error: "no answer to keepalives for 45s"}
	stale := running()
	stale.Connection.State, stale.Worker.State = "reconnecting", snapshot.WorkerUnknown
	m = step(m, pollMsg{gen: m.gen, snap: stale})
	m = step(m, press("q"))
	want := "synthwatch: root@10.1.230.174 is out of reach now; the worker was running there at " + t0.Local().Format("15:04:05") + " (pid 4242, B3_magicoder)"
	if got := m.QuitMessage(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A closed port: the header says why (the dial error), that there was
// never a contact, and when the next try is; never "figures are from 00:00:00".
func TestClosedPortSaysWhy(t *testing.T) {
	f := newFake()
	refused := "dial tcp 127.0.0.1:1: connect: connection refused"
	f.conn = snapshot.Connection{State: snapshot.LinkReconnecting, Attempt: 5, Error: refused, NextTry: tp(t0.Add(12 * time.Second))}
	f.snap = snapshot.Snapshot{Host: "root@127.0.0.1:1", Connection: snapshot.Connection{State: "reconnecting", Error: refused, Attempt: 5},
		Worker: snapshot.Worker{State: "unknown"}, Server: snapshot.Server{State: "unknown"},
		Alerts: []snapshot.Warning{{Kind: snapshot.WarnNoContact, Text: "no contact with the host: never connected"}}}
	m, _ := newModel(f, 80, 24, Config{PollEvery: 2 * time.Second})
	s := screen(m)
	for _, want := range []string{"NOT CONNECTED (attempt 5): never connected", refused, "next try in 12s", "never connected"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q on the screen:\n%s", want, s)
		}
	}
	if strings.Contains(s, "figures are from") || strings.Contains(s, "00:00:00") {
		t.Errorf("a zero time on the screen:\n%s", s)
	}
	f.conn = snapshot.Connection{State: snapshot.LinkFailed, Error: "ssh root@127.0.0.1:22: ssh: unable to authenticate, attempted methods [none publickey]"}
	m = step(m, tickMsg(t0))
	if s := screen(m); !strings.Contains(s, "CANNOT CONNECT") || !strings.Contains(s, "unable to authenticate") {
		t.Errorf("an auth failure is not on the screen:\n%s", s)
	}
}

// A root without prepared/ is a red line that says how to set it.
func TestWrongRootIsARedLine(t *testing.T) {
	f := newFake()
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0)}
	msg := RootWarning + "/data/typo on root@10.1.230.174 (no prepared/ directory): set it with --root DIR"
	f.snap = snapshot.Snapshot{Connection: snapshot.Connection{State: "connected"}, Worker: snapshot.Worker{State: "unknown"}, Alerts: []snapshot.Warning{{Kind: snapshot.WarnRoot, Text: msg}}}
	m, _ := newModel(f, 120, 40, Config{})
	s := screen(m)
	if !strings.Contains(s, "✖ "+RootWarning+"/data/typo") || !strings.Contains(s, "--root DIR") || strings.Contains(s, "no categories found yet") {
		t.Errorf("%s", s)
	}
	if v := m.View().Content; !strings.Contains(v, strings.TrimSuffix(m.st.Bad.Render("✖ "+RootWarning), "\x1b[m")) {
		t.Errorf("the root line is not red: %q", v)
	}
}

func TestWhileYouWereAway(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, c := newModel(f, 120, 40, Config{})
	f.tl.Add(snapshot.Event{Time: t0.Add(time.Hour), Kind: "stall_start", Category: "B3_magicoder", Text: "B3_magicoder: no new records for 10m0s"})
	f.tl.Add(snapshot.Event{Time: t0.Add(2 * time.Hour), Kind: "server_crash", Text: "Scheduler hit an exception"})
	c.t = t0.Add(8 * time.Hour)
	m = step(m, press("j"))
	s := screen(m)
	if !strings.Contains(s, "While you were away (2 events)") || !strings.Contains(s, "no new records") || m.sel != 0 {
		t.Fatalf("%s", s)
	}
	m = step(m, press("j"))
	if m.away != nil || m.sel != 0 {
		t.Fatal("the next key should only close the summary")
	}
}

// The away summary after a night with a flapping link, a crash, many
// stalls and a finished job: completions first, then the newest first, the
// flapping as one line, "… and N more" when it cuts, and a title count
// that is the lines shown plus the more.
func TestWhileYouWereAwayNewestFirst(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, c := newModel(f, 120, 60, Config{})
	at := func(min int) time.Time { return t0.Add(time.Hour + time.Duration(min)*time.Minute) }
	f.tl.Add(snapshot.Event{Time: at(0), Kind: "server_crash", Text: "Scheduler hit an exception"})
	for i := 0; i < 9; i++ { // 9 drops, 15 s apart
		f.tl.Add(snapshot.Event{Time: at(1).Add(time.Duration(30*i) * time.Second), Kind: "disconnect", Text: "lost the link to the host: "})
		f.tl.Add(snapshot.Event{Time: at(1).Add(time.Duration(30*i+15) * time.Second), Kind: "reconnect", Text: "connected again"})
	}
	f.tl.Add(snapshot.Event{Time: at(10), Kind: "action", Text: "action launch"})
	for i := 0; i < 20; i++ {
		f.tl.Add(snapshot.Event{Time: at(20 + i), Kind: "stall_start", Category: "B3", Text: fmt.Sprintf("B3: stall number %d", i)})
	}
	f.tl.Add(snapshot.Event{Time: at(50), Kind: "category_done", Category: "B3", Text: "B3 done: 500 records"})
	f.tl.Add(snapshot.Event{Time: at(51), Kind: "worker_exited", Text: "worker pid 7 exited: every category done"})
	f.tl.Add(snapshot.Event{Time: at(51), Kind: "pipeline_done", Text: "pipeline done: 1948 records"})
	c.t = t0.Add(8 * time.Hour)
	m = step(m, press("j"))
	lines, more := awayLines(m.away, awayMax)
	// 1 crash + 1 link line + 20 stalls + 1 exit + 2 done = 25 lines; 15 shown
	if len(lines) != awayMax || more != 25-awayMax {
		t.Fatalf("%d lines, %d more:\n%s", len(lines), more, strings.Join(lines, "\n"))
	}
	want := []string{"✓ 04:51  pipeline done", "✓ 04:50  B3 done", "04:51  worker pid 7 exited", "04:39  B3: stall number 19", "04:38  B3: stall number 18"}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want %q…", i, lines[i], w)
		}
	}
	s := screen(m)
	if !strings.Contains(s, "While you were away (25 events)") || !strings.Contains(s, "… and 10 more") || !strings.Contains(s, "B3: stall number 8") || strings.Contains(s, "B3: stall number 7") {
		t.Errorf("%s", s)
	}
	// the cut drops the oldest: the crash and the flapping are in the more
	all, _ := awayLines(m.away, 100)
	if got := all[len(all)-2]; got != "link dropped 9 times, 04:01–04:05" {
		t.Errorf("flapping: %q", got)
	}
	if got := all[len(all)-1]; got != "04:00  Scheduler hit an exception" {
		t.Errorf("oldest: %q", got)
	}
	for _, l := range all {
		if strings.Contains(l, "action launch") || strings.HasSuffix(l, ": ") {
			t.Errorf("line %q", l)
		}
	}
}

// A summary over more than a day has dates; one drop with no reason
// reads sensibly; a short away shows everything and counts it.
func TestWhileYouWereAwayDatesAndEmptyReason(t *testing.T) {
	evs := []snapshot.Event{
		{Time: t0, Kind: "disconnect", Text: "lost the link to the host: "},
		{Time: t0.Add(30 * time.Hour), Kind: "server_ready", Text: "server ready"},
	}
	lines, more := awayLines(evs, awayMax)
	d0, d1 := t0.Local().Format("01-02 15:04"), t0.Add(30*time.Hour).Local().Format("01-02 15:04")
	if more != 0 || len(lines) != 2 || lines[0] != d1+"  server ready" || lines[1] != d0+"  lost the link to the host" {
		t.Fatalf("%q %d", lines, more)
	}
	f := newFake()
	f.snap = running()
	m, c := newModel(f, 120, 40, Config{})
	for _, e := range evs {
		f.tl.Add(e)
	}
	c.t = t0.Add(31 * time.Hour)
	m = step(m, press("j"))
	if s := screen(m); !strings.Contains(s, "While you were away (1 event)") || !strings.Contains(s, "server ready") || strings.Contains(s, "… and") {
		t.Errorf("%s", s) // the drop at t0 is not after the last key (t0)
	}
}

func TestPromptInsideTheTUI(t *testing.T) {
	f := newFake()
	m, _ := newModel(f, 80, 24, Config{})
	reply := make(chan string, 1)
	m = step(m, PromptMsg{Text: "The host x is not known. Its ssh-ed25519 key fingerprint is SHA256:abc.", Reply: reply})
	m = step(m, tickMsg(t0)) // a redraw does not hide it
	if !strings.Contains(screen(m), "SHA256:abc") {
		t.Fatalf("%s", screen(m))
	}
	for _, k := range []string{"y", "e", "s"} {
		m = step(m, press(k))
	}
	m = step(m, press("enter"))
	if got := <-reply; got != "yes" || m.prompt != nil {
		t.Fatalf("reply %q", got)
	}
	m = step(m, PromptMsg{Text: "Passphrase for id_ed25519:", Secret: true, Reply: reply})
	m = step(m, press("p"))
	if strings.Contains(screen(m), "> p") || !strings.Contains(screen(m), "•") {
		t.Fatal("a passphrase was echoed")
	}
	m = step(m, press("esc"))
	if got := <-reply; got != "" {
		t.Fatalf("esc answered %q", got)
	}
}

func TestNotifications(t *testing.T) {
	var ran []string
	c := &clock{t: t0}
	n := newNotifier(NotifyConfig{OSC: true, Command: "notify", Run: func(cmd string, stdin []byte) error {
		ran = append(ran, string(stdin))
		return nil
	}}, "gpu", c.now)
	old := running()
	cur := running()
	cur.Categories[2].State = snapshot.StateStalled
	cur.Server.State, cur.Server.LastCrash = "crashed", "Scheduler hit an exception\x1b]0;pwn\x07"
	cmds := n.changes(old, cur)
	if len(cmds) != 2 {
		t.Fatalf("%d notices, want stall and crash", len(cmds))
	}
	for _, cmd := range cmds {
		runAll(cmd)
	}
	if len(ran) != 2 || !strings.Contains(ran[0], `"kind":"stall"`) || strings.Contains(ran[1], "\x1b") {
		t.Fatalf("command got %q", ran)
	}
	if again := n.changes(old, cur); len(again) != 0 {
		t.Fatal("not rate-limited")
	}
	c.t = c.t.Add(2 * time.Minute)
	n.cfg.Off = map[string]bool{"stall": true}
	if again := n.changes(old, cur); len(again) != 1 {
		t.Fatalf("after the gap, with stall off: %d", len(again))
	}
}

// Our own kill rings no bell; a worker that died does, and so does the end
// of the job (once).
// Every way the server stops serving rings once: down, crashed, hung
// (alive, generating nothing), stopped (a SIGTERM's drain); its kind is
// what a notify_command is told.
func TestNotifyServerStates(t *testing.T) {
	for st, kind := range map[snapshot.ServerState]string{snapshot.ServerDown: "server_down", snapshot.ServerCrashed: "server_crash", snapshot.ServerHung: "server_hang", snapshot.ServerStopped: "server_stop"} {
		c := &clock{t: t0}
		n := newNotifier(NotifyConfig{}, "gpu", c.now)
		var kinds []string
		n.cfg.Run, n.cfg.Command = func(_ string, stdin []byte) error { kinds = append(kinds, string(stdin)); return nil }, "notify"
		old, cur := running(), running()
		old.Server = snapshot.Server{State: snapshot.ServerBusy}
		cur.Server = snapshot.Server{State: st, Reason: "hang: NCCL watchdog thread terminated", LastCrash: "Scheduler hit an exception"}
		for _, cmd := range n.changes(old, cur) {
			runAll(cmd)
		}
		if len(kinds) != 1 || !strings.Contains(kinds[0], `"kind":"`+kind+`"`) {
			t.Errorf("%s: notices %q, want one %s", st, kinds, kind)
		}
		if cmds := n.changes(cur, cur); len(cmds) != 0 {
			t.Errorf("%s rang again while it lasted", st)
		}
	}
}

func TestNotifyKillIsNoCrash(t *testing.T) {
	c := &clock{t: t0}
	n := newNotifier(NotifyConfig{}, "gpu", c.now)
	old := running()
	killed := running()
	killed.Worker = snapshot.Worker{State: snapshot.WorkerStopped, PID: 7, ByYou: true, Reason: "pid 7 stopped by synthwatch kill"}
	if cmds := n.changes(old, killed); len(cmds) != 0 {
		t.Fatalf("a kill by you rang %d notices", len(cmds))
	}
	died := running()
	died.Worker = snapshot.Worker{State: snapshot.WorkerDied, PID: 7}
	if cmds := n.changes(old, died); len(cmds) != 1 {
		t.Fatalf("a death rang %d notices, want 1", len(cmds))
	}
	done := running()
	for i := range done.Categories {
		done.Categories[i].State = snapshot.StateDone
	}
	done.Worker = snapshot.Worker{State: snapshot.WorkerExited, PID: 8}
	var kinds []string
	n.cfg.Run, n.cfg.Command = func(_ string, stdin []byte) error { kinds = append(kinds, string(stdin)); return nil }, "notify"
	for _, cmd := range n.changes(old, done) {
		runAll(cmd)
	}
	if got := strings.Join(kinds, ""); !strings.Contains(got, `"kind":"pipeline_done"`) || !strings.Contains(got, `"kind":"category_done"`) || strings.Contains(got, `"kind":"worker_exit"`) {
		t.Fatalf("the end of the job: %s", got)
	}
	if cmds := n.changes(done, done); len(cmds) != 0 {
		t.Fatalf("a finished job rang again: %d", len(cmds))
	}
}

// runAll executes a command and any batch it returns.
func runAll(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			runAll(c)
		}
	}
}

// Golden screens: ansi.Strip(View()) at three sizes for each state.
func TestGoldenViews(t *testing.T) {
	states := map[string]func(f *fake){
		"running": func(f *fake) {},
		"stalled": func(f *fake) {
			f.snap.Categories[2].State, f.snap.Categories[2].ETASeconds = snapshot.StateStalled, nil
			f.snap.ETASeconds = nil
			f.snap.Categories[2].Warnings = []string{"B3_magicoder: the worker log says 5000/10000 but raw_responses.jsonl has 4200 lines"}
		},
		"disconnected": func(f *fake) {
			f.conn = snapshot.Connection{State: snapshot.LinkReconnecting, Attempt: 3, LastContact: tp(t0.Add(-95 * time.Second)), Error: "no answer to keepalives for 45s"}
		},
		"never_connected": func(f *fake) {
			refused := "dial tcp 127.0.0.1:1: connect: connection refused"
			f.conn = snapshot.Connection{State: snapshot.LinkReconnecting, Attempt: 5, Error: refused, NextTry: tp(t0.Add(12 * time.Second))}
			f.snap = snapshot.Snapshot{Connection: snapshot.Connection{State: "reconnecting", Error: refused}, Worker: snapshot.Worker{State: "unknown"},
				Server: snapshot.Server{State: "unknown"}, Alerts: []snapshot.Warning{{Kind: snapshot.WarnNoContact, Text: "no contact with the host: never connected"}}}
			f.worker, f.server = nil, nil
		},
		"server_crashed": func(f *fake) {
			f.snap.Server = snapshot.Server{State: "crashed", LastCrash: "Scheduler hit an exception: Traceback (most recent call last): … torch.OutOfMemoryError: CUDA out of memory.", Retractions: 4}
		},
		"all_done": func(f *fake) {
			for i := range f.snap.Categories {
				f.snap.Categories[i].State, f.snap.Categories[i].Done, f.snap.Categories[i].ETASeconds, f.snap.Categories[i].RatePerMin = snapshot.StateDone, 10000, nil, 0
			}
			f.snap.Worker = snapshot.Worker{State: "stopped", PID: 4242, Source: "worker.json"}
			f.snap.ETASeconds = nil
		},
		"adaptive_window": func(f *fake) {
			// the worker's adaptive window on its category (worker.json)
			f.snap.Categories[2].Window, f.snap.Categories[2].WindowReason = 212, "↑ queue empty; KV 71 %"
		},
		"window_yielded": func(f *fake) {
			// behind a shared gateway: requests preempted for other traffic and sent again
			f.snap.Categories[2].Window, f.snap.Categories[2].WindowReason, f.snap.Categories[2].Yielded = 96, "↓ yielded to other traffic (2)", 13
		},
		"vitals": func(f *fake) { f.snap.Vitals = vitals8() },
		"gpu_lost_disk_low": func(f *fake) {
			v := vitals8()
			v.GPUs = append(v.GPUs[:5], v.GPUs[6:]...)
			v.GPUsLost = []int{5}
			v.Disk.FreeBytes, v.Disk.FullInS, v.Disk.Low = 300<<30, fp(5400), true
			f.snap.Vitals = v
		},
		"hostile_log": func(f *fake) {
			// what the pipeline hands over is sanitised; names come raw from the host
			f.snap.Categories[5].Name = "B6\x1b]0;owned\x07\nname"
			f.worker = []string{"\x1b[2J\x1b]52;c;cGF5bG9hZA==\x07 should never reach the screen raw", strings.Repeat("x", 5000)}
		},
	}
	for name, mut := range states {
		for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 50}} {
			t.Run(name+"_"+itoa(size[0])+"x"+itoa(size[1]), func(t *testing.T) {
				f := newFake()
				f.snap = running()
				f.worker = []string{"Processing: B3_magicoder (SHORT)", "B3_magicoder: 10000 prompts", "4200/10000 (3 err) 1.6 req/s avg_comp=230tok ETA=1.0h"}
				f.server = []string{"[2026-11-29 02:59:58 TP0] Decode batch, #running-req: 72, #token: 300112, token usage: 0.96, cuda graph: True, gen throughput (token/s): 930.10, #queue-req: 0"}
				f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
				mut(f)
				m, _ := newModel(f, size[0], size[1], Config{PollEvery: 2 * time.Second, Plain: true})
				got := screen(m)
				for _, l := range strings.Split(got, "\n") {
					if w := ansi.StringWidth(l); w > size[0] {
						t.Fatalf("line wider than the screen (%d > %d): %q", w, size[0], l)
					}
				}
				if n := strings.Count(got, "\n") + 1; n > size[1] {
					t.Fatalf("%d lines on a %d-line screen", n, size[1])
				}
				if strings.ContainsAny(m.View().Content, "\x07") || strings.Contains(m.View().Content, "\x1b]") {
					t.Fatal("an escape sequence from the host reached the screen")
				}
				golden.RequireEqual(t, got) // testdata/TestGoldenViews/NAME_WxH.golden; -update rewrites it
			})
		}
	}
}

func fp(v float64) *float64 { return &v }
func ip(v int64) *int64     { return &v }

// vitals8 is an 8-GPU host at work, as the pipeline reads it.
func vitals8() snapshot.Vitals {
	v := snapshot.Vitals{Load1: fp(12.31), MemAvailBytes: ip(1416 << 30), MemTotalBytes: ip(2016 << 30),
		WorkerRSSBytes: ip(1503 << 20), WorkerCPUPct: fp(180.4),
		Disk: &snapshot.Disk{FreeBytes: 1300 << 30, TotalBytes: 7 << 40, FullInS: fp(9 * 3600)}}
	for i := 0; i < 8; i++ {
		v.GPUs = append(v.GPUs, snapshot.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", UtilPct: fp(97), MemUsedMiB: fp(63412), MemTotalMiB: fp(81559),
			TempC: fp(float64(64 + i)), PowerW: fp(612.3), PIDs: []int{48211}})
	}
	return v
}

// After a night away the header says the job is done, when and how much;
// before pipeline_done it shows no such news.
func TestHeaderSaysPipelineDone(t *testing.T) {
	f := newFake()
	s := running()
	for i := range s.Categories {
		s.Categories[i].State, s.Categories[i].Done = snapshot.StateDone, 200
	}
	s.Worker = snapshot.Worker{State: snapshot.WorkerExited, PID: 4242, Source: "worker.json"}
	s.ETASeconds = nil
	f.snap, f.conn = s, snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0.Add(-time.Second))}
	m, _ := newModel(f, 140, 40, Config{})
	if v := ansi.Strip(m.View().Content); strings.Contains(v, "pipeline done") || !strings.Contains(v, "ETA -") {
		t.Fatalf("done before pipeline_done:\n%s", v)
	}
	at := time.Date(2026, 11, 29, 2, 18, 0, 0, time.Local)
	s.Events = append(s.Events, snapshot.Event{Time: at, Kind: "pipeline_done", Text: "pipeline done: 2000 records"})
	f.snap = s
	m, _ = newModel(f, 140, 40, Config{})
	if v := ansi.Strip(m.View().Content); !strings.Contains(v, "✓ pipeline done 11-29 02:18 (2,000 records)") {
		t.Fatalf("header:\n%s", v)
	}
}

// A GPU that drops out, an idle spell and a low disk ring once each; a
// reconnect (a stale snapshot has no vitals) rings nothing again.
func TestNotifyVitals(t *testing.T) {
	var kinds []string
	c := &clock{t: t0}
	n := newNotifier(NotifyConfig{Command: "notify", Run: func(_ string, stdin []byte) error {
		var nt Notice
		_ = json.Unmarshal(stdin, &nt)
		kinds = append(kinds, nt.Kind+": "+nt.Text)
		return nil
	}}, "gpu", c.now)
	up := snapshot.Connection{State: snapshot.LinkConnected}
	snap := func(v snapshot.Vitals) snapshot.Snapshot { s := running(); s.Connection, s.Vitals = up, v; return s }
	ring := func(old, cur snapshot.Snapshot) {
		for _, cmd := range n.changes(old, cur) {
			runAll(cmd)
		}
	}
	all := snap(vitals8())
	ring(all, all)
	lost := vitals8()
	lost.GPUs, lost.GPUsLost = lost.GPUs[1:], []int{0}
	lost.Disk.Low = true
	ring(all, snap(lost))
	if len(kinds) != 2 || kinds[0] != "gpu_lost: gpu: GPU 0 dropped out: 7 GPUs left" || !strings.HasPrefix(kinds[1], "disk_low: gpu: disk low: 1.3 TiB free (18.1%), full in 9h00m") {
		t.Fatalf("notices: %q", kinds)
	}
	stale := running()
	stale.Connection = snapshot.Connection{State: snapshot.LinkReconnecting}
	c.t = c.t.Add(10 * time.Minute)
	ring(snap(lost), stale)
	ring(stale, snap(lost))
	idle := lost
	idle.GPUsIdle = true
	ring(snap(lost), snap(idle))
	if len(kinds) != 3 || kinds[2] != "gpu_idle: gpu: every GPU idle while the worker runs" {
		t.Fatalf("after a reconnect: %q", kinds)
	}
}

// L names the root it launches in, and on a root the host said is none
// (the red line in place of the table) it refuses with that line's words.
func TestLaunchDialogNamesTheRootAndRefusesNone(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, _ := newModel(f, 160, 40, Config{})
	m = step(m, press("L"))
	if !strings.Contains(screen(m), "Launch the worker on root@10.1.230.174 in /data/eagle3/synth_100k?") {
		t.Fatalf("%s", screen(m))
	}
	f.snap.Categories = nil
	f.snap.Warn(snapshot.WarnRoot, RootWarning+"/data/eagle3/synht on root@10.1.230.174 (no prepared/ directory)")
	m, _ = newModel(f, 160, 40, Config{})
	for _, k := range []string{"L", "r"} {
		m = step(m, press(k))
		if !strings.Contains(screen(m), "Nothing to launch: no pipeline root at /data/eagle3/synht") {
			t.Fatalf("%s on no root:\n%s", k, screen(m))
		}
		m, _ = run(m, press("y"))
		if len(f.launched) != 0 {
			t.Fatalf("%s y launched on no root", k)
		}
	}
}

// A worker asked to stop says so in the header while it drains, with how
// many requests the server still has.
func TestHeaderSaysStoppingWhileTheWorkerDrains(t *testing.T) {
	f := newFake()
	f.snap = running()
	f.snap.Worker.Phase = "stopping"
	m, _ := newModel(f, 160, 40, Config{})
	if !strings.Contains(screen(m), "worker running pid 4242 B3_magicoder stopping (draining 72 requests)") {
		t.Fatalf("%s", screen(m))
	}
	if got := StoppingText(running()); got != "" {
		t.Fatalf("a worker not stopping: %q", got)
	}
}

// A notice quoting a server URL with a password (a crash line naming it)
// tells the notify_command (and the terminal's OSC 9) the URL redacted.
func TestNoticeRedactsURLPassword(t *testing.T) {
	var ran []string
	n := newNotifier(NotifyConfig{Command: "notify", Run: func(_ string, stdin []byte) error {
		ran = append(ran, string(stdin))
		return nil
	}}, "gpu", (&clock{t: t0}).now)
	old, cur := running(), running()
	cur.Server.State, cur.Server.LastCrash = "crashed", "connection to http://admin:hunter2pass@10.0.0.1:8080 lost"
	for _, cmd := range n.changes(old, cur) {
		runAll(cmd)
	}
	if len(ran) != 1 || strings.Contains(ran[0], "hunter2pass") || !strings.Contains(ran[0], "http://admin:***@10.0.0.1:8080") {
		t.Fatalf("notify_command got %q", ran)
	}
}

// The first poll starts as the link dials and reads once it is up: the
// tick that sees the link come up starts no other poll, whose newer
// generation dropped the first's answer (the first table came a poll
// later). After a first answer, a link back starts one at once.
func TestFirstPollKeptWhenTheLinkComesUp(t *testing.T) {
	f := newFake()
	f.snap = snapshot.Snapshot{Connection: snapshot.Connection{State: "connected"}, Worker: snapshot.Worker{State: "running"},
		Categories: []snapshot.Category{{Name: "B1_glaive", Class: "SHORT", Done: 7, Target: 10, State: "running"}}}
	c := &clock{t: t0}
	m := New(f, Config{Now: c.now})
	gen := m.gen
	m = step(m, tea.WindowSizeMsg{Width: 120, Height: 30})
	m = step(m, tickMsg(t0))
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0)}
	m = step(m, tickMsg(t0.Add(time.Second)))
	m = step(m, pollMsg{gen: gen, snap: f.snap})
	if s := screen(m); !strings.Contains(s, "B1_glaive") || !strings.Contains(s, "7/10") {
		t.Fatalf("the first poll's answer was dropped:\n%s", s)
	}
	f.conn = snapshot.Connection{State: snapshot.LinkReconnecting}
	m = step(m, tickMsg(t0.Add(2*time.Second)))
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0.Add(3 * time.Second))}
	if nm, _ := m.Update(tickMsg(t0.Add(3 * time.Second))); nm.(Model).gen == gen {
		t.Fatal("a link back after a first answer starts no fresh poll")
	}
}

// The first table shows the counts at once; when the tokens of files the
// counts left to the host are still to come (the total partial), the next
// poll is asked at once, not a beat (2 s) later.
func TestFirstAnswerWithTokensToComeAsksTheNextPollAtOnce(t *testing.T) {
	for _, partial := range []bool{true, false} {
		f := newFake()
		f.conn = snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0)}
		f.snap = snapshot.Snapshot{Connection: f.conn, Worker: snapshot.Worker{State: "running"}, TokensPartial: partial,
			Categories: []snapshot.Category{{Name: "B1_glaive", Class: "SHORT", Done: 7, Target: 10, State: "running"}}}
		m := New(f, Config{PollEvery: 2 * time.Second, Now: func() time.Time { return t0 }})
		_, cmd := m.Update(pollMsg{gen: m.gen, snap: f.snap})
		got := askedAtOnce(cmd)
		if got != partial {
			t.Errorf("tokens to come %v: the next poll asked within 0.5 s: %v", partial, got)
		}
	}
}
