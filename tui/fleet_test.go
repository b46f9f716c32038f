package tui

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// named is a fake host with its own name.
type named struct {
	*fake
	name  string
	block chan struct{} // if set, Poll waits for it: a black-holed link
}

func (n named) Host() string { return n.name }
func (n named) Poll(ctx context.Context) snapshot.Snapshot {
	if n.block != nil {
		<-n.block
	}
	return n.fake.Poll(ctx)
}

// fleetHost is a host running the night of running(), named.
func fleetHost(name string) named {
	f := newFake()
	f.snap = running()
	f.snap.Host = name
	f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
	return named{fake: f, name: name}
}

// threeHosts: one running, one stalled with its server down and its disk
// low, one whose link is lost (its figures are 95 s old).
func threeHosts() []named {
	a, b, c := fleetHost("gpu1"), fleetHost("gpu2"), fleetHost("root@10.0.0.3:22")
	b.snap.Categories[2].State, b.snap.Categories[2].ETASeconds, b.snap.ETASeconds = snapshot.StateStalled, nil, nil
	b.snap.Worker.State = snapshot.WorkerStalled
	b.snap.Server = snapshot.Server{State: snapshot.ServerDown, Reason: "/metrics refused"}
	b.snap.Vitals.Disk = &snapshot.Disk{FreeBytes: 1 << 30, TotalBytes: 1 << 40, Low: true}
	c.snap.Categories[2].Done = 1000
	c.snap.ETASeconds = fptr(20000)
	c.conn = snapshot.Connection{State: snapshot.LinkReconnecting, Attempt: 2, LastContact: tp(t0.Add(-95 * time.Second)), Error: "no answer to keepalives"}
	return []named{a, b, c}
}

func newFleet(hosts []named, w, h int, cfg Config) (Fleet, *clock) {
	c := &clock{t: t0}
	cfg.Now, cfg.Plain = c.now, true
	if cfg.PollEvery == 0 {
		cfg.PollEvery = 2 * time.Second
	}
	var bes []Backend
	for _, n := range hosts {
		bes = append(bes, n)
	}
	fl := NewFleet(bes, cfg)
	fl = fstep(fl, tea.WindowSizeMsg{Width: w, Height: h})
	for i, n := range hosts {
		fl = fstep(fl, hostMsg{i, tickMsg(t0)})
		fl = fstep(fl, hostMsg{i, pollMsg{gen: fl.hosts[i].gen, snap: n.snap}})
	}
	return fl, c
}

func fstep(fl Fleet, msg tea.Msg) Fleet {
	n, _ := fl.Update(msg)
	return n.(Fleet)
}

func fscreen(fl Fleet) string { return ansi.Strip(fl.View().Content) }

// rowOf is the screen line of a host's row.
func rowOf(scr, host string) string {
	for _, l := range strings.Split(scr, "\n") {
		if f := strings.Fields(l); len(f) > 1 && (host == "fleet" && f[0] == host || host != "fleet" && f[1] == host) {
			return l
		}
	}
	return ""
}

func TestFleetGolden(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}, {160, 50}} {
		t.Run(itoa(size[0])+"x"+itoa(size[1]), func(t *testing.T) {
			fl, _ := newFleet(threeHosts(), size[0], size[1], Config{})
			got := fscreen(fl)
			for _, l := range strings.Split(got, "\n") {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Fatalf("line wider than the screen (%d > %d): %q", w, size[0], l)
				}
			}
			if n := strings.Count(got, "\n") + 1; n != size[1] {
				t.Fatalf("%d lines on a %d-line screen", n, size[1])
			}
			golden.RequireEqual(t, got)
		})
	}
}

// Each row says its own host's state: the lost link stale with its age and
// no ETA, the stalled host its alerts; the total has no ETA while a host
// with work left has none.
func TestFleetRowsShowEachHost(t *testing.T) {
	fl, _ := newFleet(threeHosts(), 160, 50, Config{})
	scr := fscreen(fl)
	if r := rowOf(scr, "gpu1"); !strings.Contains(r, "● up") || !strings.Contains(r, "running B3_magicoder") || !strings.Contains(r, etaText(fptr(9000))) {
		t.Errorf("gpu1's row: %q", r)
	}
	r := rowOf(scr, "gpu2")
	for _, want := range []string{"stalled", "server down", "disk low", "3 err"} {
		if !strings.Contains(r, want) {
			t.Errorf("gpu2's row lacks %q: %q", want, r)
		}
	}
	r = rowOf(scr, "root@10.0.0.3:22")
	if !strings.Contains(r, "stale 1m35s ago") || strings.Contains(r, etaText(fptr(20000))) {
		t.Errorf("the lost host's row must be stale with its age and no ETA: %q", r)
	}
	if tot := rowOf(scr, "fleet"); !strings.Contains(tot, "2/3 live") || !strings.Contains(tot, "?") || !strings.Contains(tot, "69,394/300,000") {
		t.Errorf("total row: %q", tot)
	}
}

// The night's energy has a column where the alerts fit inline: each host's
// kWh (parse.Spend.KWh, the runs' tallies), "-" where none was measured,
// and the fleet's sum, a floor ("≥") while a host measured none.
func TestFleetShowsEnergy(t *testing.T) {
	a, b, c := fleetHost("gpu1"), fleetHost("gpu2"), fleetHost("gpu3")
	a.snap.Spend = &parse.Spend{Runs: 2, KWh: fptr(12.5)}
	b.snap.Spend = &parse.Spend{Runs: 1, KWh: fptr(3.25)}
	fl, _ := newFleet([]named{a, b, c}, 160, 50, Config{})
	scr := fscreen(fl)
	for host, want := range map[string]string{"gpu1": " 12.5 ", "gpu2": " 3.25 ", "gpu3": "2h30m      -  "} {
		if r := rowOf(scr, host); !strings.Contains(r, want) {
			t.Errorf("%s's row lacks %q: %q", host, want, r)
		}
	}
	if tot := rowOf(scr, "fleet"); !strings.Contains(tot, " ≥15.8 ") {
		t.Errorf("the fleet's energy with a host unmeasured: %q", tot)
	}
	c.snap.Spend = &parse.Spend{Runs: 1, KWh: fptr(1)}
	fl, _ = newFleet([]named{a, b, c}, 160, 50, Config{})
	if tot := rowOf(fscreen(fl), "fleet"); !strings.Contains(tot, " 16.8 ") {
		t.Errorf("the fleet's energy, every host measured: %q", tot)
	}
	fl, _ = newFleet([]named{a, b, c}, 120, 40, Config{})
	if strings.Contains(fscreen(fl), "KWH") {
		t.Error("at 120 columns the energy has no room, and the row no column for it")
	}
}

// The fleet's ETA is the host that finishes last at its own pace.
func TestFleetETAIsTheLastHostToFinish(t *testing.T) {
	a, b := fleetHost("gpu1"), fleetHost("gpu2")
	b.snap.ETASeconds = fptr(30000)
	fl, _ := newFleet([]named{a, b}, 160, 50, Config{})
	tot := rowOf(fscreen(fl), "fleet")
	if !strings.Contains(tot, etaText(fptr(30000))) || !strings.Contains(tot, "last to finish: gpu2") {
		t.Errorf("total row: %q", tot)
	}
}

// K on the fleet screen kills the selected host's worker, named in the
// dialog, and no other host's.
func TestFleetKillActsOnTheSelectedHostOnly(t *testing.T) {
	hosts := threeHosts()
	fl, _ := newFleet(hosts, 120, 40, Config{})
	fl = fstep(fl, press("j"))
	fl = fstep(fl, press("K"))
	if scr := fscreen(fl); !strings.Contains(scr, "gpu2: Kill worker pid 4242 on gpu2?") {
		t.Fatalf("the dialog must name the selected host:\n%s", scr)
	}
	n, cmd := fl.Update(press("y"))
	fl = n.(Fleet)
	if cmd == nil {
		t.Fatal("yes started no action")
	}
	msg, ok := cmd().(hostMsg)
	if !ok || msg.i != 1 {
		t.Fatalf("the kill's answer is not tagged with host 2: %#v", msg)
	}
	if len(hosts[1].killed) != 1 || hosts[1].killed[0] != 4242 || len(hosts[0].killed)+len(hosts[2].killed) != 0 {
		t.Fatalf("killed: gpu1 %v, gpu2 %v, gpu3 %v", hosts[0].killed, hosts[1].killed, hosts[2].killed)
	}
	fl = fstep(fl, msg)
	if r := fl.hosts[1].result; !strings.Contains(r, "kill: pid 4242 gone") {
		t.Errorf("gpu2's result: %q", r)
	}
	if fl.hosts[0].result != "" || fl.hosts[2].result != "" {
		t.Errorf("other hosts got a result: %q %q", fl.hosts[0].result, fl.hosts[2].result)
	}
}

// enter opens the selected host's own dashboard, a number opens that host,
// esc comes back, but first closes what the dashboard has open.
func TestFleetEnterOpensAHostAndEscReturns(t *testing.T) {
	fl, _ := newFleet(threeHosts(), 120, 40, Config{})
	fl = fstep(fl, press("enter"))
	scr := fscreen(fl)
	if !strings.Contains(scr, "host 1 of 3: gpu1") || !strings.Contains(scr, "B10_code_feedback") {
		t.Fatalf("enter did not open gpu1's dashboard:\n%s", scr)
	}
	fl = fstep(fl, press("/")) // the search line: esc cancels it, it does not leave
	fl = fstep(fl, press("esc"))
	if fl.open != 0 {
		t.Fatal("esc left the dashboard while its search line was open")
	}
	fl = fstep(fl, press("esc"))
	if fl.open != -1 || !strings.Contains(fscreen(fl), "synthwatch fleet") {
		t.Fatalf("esc did not come back:\n%s", fscreen(fl))
	}
	fl = fstep(fl, press("2"))
	if fl.open != 1 || !strings.Contains(fscreen(fl), "host 2 of 3: gpu2") {
		t.Fatalf("2 did not open gpu2:\n%s", fscreen(fl))
	}
	fl = fstep(fl, press("9")) // in a dashboard, numbers are its own keys
	if fl.open != 1 {
		t.Fatal("a number in a host's dashboard left it")
	}
}

// A black-holed host's poll blocks only its own row: the other host's
// answers arrive and show while it hangs.
func TestFleetBlockedHostDelaysNoOther(t *testing.T) {
	hole, ok := fleetHost("hole"), fleetHost("gpu2")
	hole.block = make(chan struct{})
	defer close(hole.block)
	ok.snap.Categories[2].Done = 4321
	c := &clock{t: t0}
	fl := NewFleet([]Backend{hole, ok}, Config{PollEvery: time.Hour, Plain: true, Now: c.now})
	fl = fstep(fl, tea.WindowSizeMsg{Width: 160, Height: 50})
	msgs := make(chan tea.Msg, 16)
	var start func(tea.Cmd)
	start = func(cmd tea.Cmd) {
		go func() {
			switch m := cmd().(type) {
			case tea.BatchMsg:
				for _, c := range m {
					if c != nil {
						start(c)
					}
				}
			default:
				msgs <- m
			}
		}()
	}
	start(fl.Init())
	deadline := time.After(30 * time.Second)
	for !strings.Contains(rowOf(fscreen(fl), "gpu2"), "24,319/100,000") {
		select {
		case m := <-msgs:
			if hm, ok := m.(hostMsg); ok && hm.i == 0 {
				if _, poll := hm.msg.(pollMsg); poll {
					t.Fatal("the black-holed host answered its poll")
				}
			}
			n, cmd := fl.Update(m)
			fl = n.(Fleet)
			if cmd != nil {
				start(cmd)
			}
		case <-deadline:
			t.Fatalf("gpu2's row never showed its poll:\n%s", fscreen(fl))
		}
	}
	if r := rowOf(fscreen(fl), "hole"); strings.Contains(r, "100,000") {
		t.Errorf("the blocked host shows figures it never read: %q", r)
	}
}

// Quitting from the fleet says what is left on every host.
func TestFleetQuitNamesEveryHost(t *testing.T) {
	fl, _ := newFleet(threeHosts()[:2], 120, 40, Config{})
	n, cmd := fl.Update(press("q"))
	if cmd == nil || !isQuit(cmd) {
		t.Fatal("q did not quit")
	}
	msg := n.(Fleet).QuitMessage()
	if !strings.Contains(msg, "keeps running on gpu1") || !strings.Contains(msg, "on gpu2") {
		t.Errorf("quit message: %q", msg)
	}
}

// With Repaint set, a host's news waits for the others' answers: while a
// poll is out, a message leaves the screen as drawn and sends for a
// repaint, which then shows the news; the last answer and a key repaint
// at once.
func TestFleetCoalescesHostRepaints(t *testing.T) {
	hosts := threeHosts()
	fl, c := newFleet(hosts, 150, 30, Config{Repaint: 300 * time.Millisecond})
	fl.hosts[2].polling = true // its answer is still to come
	before := fscreen(fl)      // drawn now, at t0
	hosts[0].snap.Categories[2].Done += 7
	c.t = c.t.Add(100 * time.Millisecond)
	n, cmd := fl.Update(hostMsg{0, pollMsg{gen: fl.hosts[0].gen, snap: hosts[0].snap}})
	fl = n.(Fleet)
	if got := fscreen(fl); got != before {
		t.Fatalf("repainted within Repaint of the last paint:\n%s", got)
	}
	if !fl.paint.pending || cmd == nil {
		t.Fatal("no repaint sent for the held-back news")
	}
	c.t = c.t.Add(300 * time.Millisecond)
	fl = fstep(fl, repaintMsg{})
	after := fscreen(fl)
	if after == before {
		t.Fatalf("the repaint did not show the news:\n%s", after)
	}
	hosts[1].snap.Categories[2].Done += 5
	fl = fstep(fl, hostMsg{1, pollMsg{gen: fl.hosts[1].gen, snap: hosts[1].snap}}) // held back again
	held := fscreen(fl)
	fl = fstep(fl, tea.KeyPressMsg{Code: 'j', Text: "j"}) // a key: at once
	if fscreen(fl) == held {
		t.Fatal("a key did not repaint at once")
	}
	fl = fstep(fl, repaintMsg{})
	drawn := fscreen(fl)
	hosts[2].snap.Categories[2].Done += 9
	fl = fstep(fl, hostMsg{2, pollMsg{gen: fl.hosts[2].gen, snap: hosts[2].snap}}) // the last answer
	if fscreen(fl) == drawn {
		t.Fatal("the beat's last answer did not repaint at once")
	}
}

// Hosts poll on the clock's beat: a poll that ends anywhere in an interval
// waits for the next multiple of it, so a fleet's answers come together
// and one repaint draws them; a poll that ended just before the beat
// still rests a quarter interval.
func TestPollsKeepTheClocksBeat(t *testing.T) {
	f := newFake()
	f.snap = running()
	m, c := newModel(f, 120, 40, Config{PollEvery: 2 * time.Second})
	beat := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ at, want time.Duration }{
		{0, 2 * time.Second},
		{300 * time.Millisecond, 1700 * time.Millisecond},
		{1900 * time.Millisecond, 500 * time.Millisecond}, // rests a quarter interval, off the beat once
		{2500 * time.Millisecond, 1500 * time.Millisecond},
	} {
		c.t = beat.Add(tc.at)
		if got := m.nextPoll(); got != tc.want {
			t.Errorf("a poll ending %v after a beat waits %v, want %v", tc.at, got, tc.want)
		}
	}
}

// A poll starting changes no row: it does not repaint the fleet screen.
func TestFleetPollDueDoesNotRepaint(t *testing.T) {
	fl, _ := newFleet(threeHosts(), 150, 30, Config{Repaint: 300 * time.Millisecond})
	fl = fstep(fl, repaintMsg{}) // the first answers' repaint
	fl.View()
	_, cmd := fl.Update(hostMsg{0, pollDue{fl.hosts[0].gen}})
	if fl.paint.pending || fl.paint.due {
		t.Fatal("a poll's start asked for a repaint")
	}
	if cmd == nil {
		t.Fatal("the due poll did not start")
	}
}

// Hosts on one address told apart by their ports, and long names told
// apart by their ends: HOST takes the room the screen has, and a name it
// must cut loses its middle, never its port.
func TestFleetGoldenHostsApart(t *testing.T) {
	names := []string{"root@127.0.0.1:56001", "root@127.0.0.1:57002", "synth@gpu-node-a17.cluster.example.org", "synth@gpu-node-a18.cluster.example.org:2222"}
	for _, size := range [][2]int{{100, 16}, {160, 16}} {
		t.Run(itoa(size[0])+"x"+itoa(size[1]), func(t *testing.T) {
			var hosts []named
			for _, n := range names {
				hosts = append(hosts, fleetHost(n))
			}
			fl, _ := newFleet(hosts, size[0], size[1], Config{})
			got := fscreen(fl)
			seen := map[string]bool{}
			for _, l := range strings.Split(got, "\n") {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Fatalf("line wider than the screen (%d > %d): %q", w, size[0], l)
				}
				if f := strings.Fields(l); len(f) > 1 && strings.Contains(f[1], "@") {
					if seen[f[1]] {
						t.Errorf("two rows show the host as %q", f[1])
					}
					seen[f[1]] = true
					if !strings.HasSuffix(f[1], ":56001") && !strings.HasSuffix(f[1], ":57002") && !strings.HasSuffix(f[1], ".org") && !strings.HasSuffix(f[1], ":2222") {
						t.Errorf("a host cell lost its end: %q", f[1])
					}
				}
			}
			if len(seen) != len(names) {
				t.Errorf("%d distinct host cells, want %d:\n%s", len(seen), len(names), got)
			}
			golden.RequireEqual(t, got)
		})
	}
}

func TestFitMiddle(t *testing.T) {
	for _, c := range []struct {
		in   string
		w    int
		want string
	}{
		{"gpu1", 8, "gpu1    "},
		{"root@127.0.0.1:56001", 20, "root@127.0.0.1:56001"},
		{"root@127.0.0.1:56001", 14, "root@12…:56001"},
		{"root@127.0.0.1:56001", 13, "root@1…:56001"},
		{"é-host-名前-end", 9, "é-ho…-end"},
	} {
		if got := fitMiddle(c.in, c.w); got != c.want || ansi.StringWidth(got) != c.w {
			t.Errorf("fitMiddle(%q, %d) = %q (width %d), want %q", c.in, c.w, got, ansi.StringWidth(got), c.want)
		}
	}
}

// A host never reached is neither stale (it has no old figures) nor a host
// with work left and no ETA (its work is not known): the header and the
// total row say it was never reached, and the fleet's ETA is unknown.
func TestFleetTotalsAHostNeverReached(t *testing.T) {
	t.Parallel()
	eta := 600.0
	rows := []fleetRow{
		{name: "a", have: true, reached: true, done: 10, target: 20, eta: &eta},
		{name: "b", have: true, reached: true, stale: true, done: 5, target: 20, age: time.Minute},
		{name: "c", stale: true},
	}
	tot := total(rows)
	if got, want := tot.liveText(), "  1 live, 1 stale, 1 never reached"; got != want {
		t.Errorf("header %q, want %q", got, want)
	}
	if got, want := tot.note, "1 host(s) never reached; 1 host(s) with work left and no ETA"; got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	if tot.etaText() != "?" {
		t.Errorf("ETA %q with a host never reached", tot.etaText())
	}
	tot = total(rows[:1])
	if tot.liveText() != "  1 live, 0 stale" || tot.note != "last to finish: a" {
		t.Errorf("one live host: %q, %q", tot.liveText(), tot.note)
	}
}

// A name with a right-to-left override or zero-width characters (the
// worker's category, a category's row) reaches the fleet's and the
// dashboard's screens without them: U+202E would show the rest of the line
// reversed.
func TestFormatCharactersLeaveNoScreen(t *testing.T) {
	hosts := threeHosts()
	s := &hosts[0].snap
	s.Worker.Category = "\u202eevil-bidi-gpj.exe"
	s.Categories[0].Name = "zw\u200b\u200d\u2060j"
	fl, _ := newFleet(hosts, 160, 50, Config{})
	m, _ := newModel(hosts[0].fake, 160, 50, Config{})
	m.lastWorker, m.lastWorkerAt = s.Worker, t0
	quit := m.quitMessage()
	for what, scr := range map[string]string{"fleet": fl.View().Content, "dashboard": m.View().Content, "quit message": quit} {
		for _, r := range scr {
			if unicode.Is(unicode.Cf, r) {
				t.Errorf("the %s drew %U", what, r)
			}
		}
		if !strings.Contains(scr, "evil-bidi-g") {
			t.Errorf("the %s lost the worker's category:\n%s", what, ansi.Strip(scr))
		}
	}
}
