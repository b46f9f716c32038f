package tui

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// Fleet is the root model for several hosts. Each host is a whole Model
// over its own Backend: it polls, ticks, notifies and acts on its own
// Cmds, so a black-holed host blocks only its own poll. Fleet tags every
// Cmd of a host with the host's index (hostMsg) and hands the answer back
// to that host alone. The fleet screen draws a row per host; enter opens a
// host's own dashboard, esc comes back.
type Fleet struct {
	hosts  []Model
	cfg    Config
	st     Styles
	keys   fleetKeyMap
	width  int
	height int

	sel      int
	open     int         // the host whose dashboard is shown; -1: the fleet screen
	prompts  []PromptMsg // questions from the links (host keys, passphrases), oldest first
	input    *lineInput  // the answer to prompts[0]
	help     bool
	quitting bool
	paint    *paint // shared by the model's copies: View keeps what it drew
}

// paint coalesces the hosts' repaints. Sixteen hosts send some twenty
// messages a second (answers, poll timers, ticks), and drawing the screen
// and diffing it for the terminal after each was most of the fleet's CPU.
// A host's news is drawn Config.Repaint after it came (repaintMsg), with
// whatever else came meanwhile: the hosts poll on the same beat, so one
// repaint shows them all; the beat's last answer repaints at once. Keys,
// resizes and prompts repaint at once.
// Repaint 0 repaints after every message (tests).
type paint struct {
	view    string
	due     bool // the next View draws afresh
	pending bool // a repaintMsg is on its way
}

type repaintMsg struct{}

// repaint sends for a repaint in Repaint, unless one is on its way.
func (f Fleet) repaint() tea.Cmd {
	p := f.paint
	if f.cfg.Repaint <= 0 {
		p.due = true
		return nil
	}
	if p.pending {
		return nil
	}
	p.pending = true
	return tea.Tick(f.cfg.Repaint, func(time.Time) tea.Msg { return repaintMsg{} })
}

// polling says whether a host's poll is out (a slow or black-holed host's
// for as long as it takes: its news then waits no longer than Repaint).
func (f Fleet) polling() bool {
	for _, h := range f.hosts {
		if h.polling {
			return true
		}
	}
	return false
}

// hostMsg is a host's own message (a poll's answer, its tick, an action's
// result), tagged with the host it belongs to.
type hostMsg struct {
	i   int
	msg tea.Msg
}

// NewFleet makes the fleet model, one dashboard per Backend, in order.
func NewFleet(bes []Backend, cfg Config) Fleet {
	f := Fleet{open: -1, width: 120, height: 40, paint: &paint{due: true}}
	for _, be := range bes {
		f.hosts = append(f.hosts, New(be, cfg))
	}
	if len(f.hosts) > 0 {
		f.cfg, f.st = f.hosts[0].cfg, f.hosts[0].st // New filled in the defaults
	}
	f.keys = newFleetKeyMap(f.cfg.ReadOnly)
	return f
}

func (f Fleet) Init() tea.Cmd {
	var cmds []tea.Cmd
	for i := range f.hosts {
		cmds = append(cmds, wrapHost(i, f.hosts[i].Init()))
	}
	return tea.Batch(cmds...)
}

// wrapHost tags what cmd returns with host i. A batch is opened so each of
// its Cmds is tagged; a message that is not the host model's own (tea.Quit,
// a notification's raw OSC bytes) goes to the program as it is.
func wrapHost(i int, cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		switch msg := cmd().(type) {
		case nil:
			return nil
		case tea.BatchMsg:
			out := make(tea.BatchMsg, 0, len(msg))
			for _, c := range msg {
				out = append(out, wrapHost(i, c))
			}
			return out
		case pollMsg, pollDue, tickMsg, actionMsg:
			return hostMsg{i: i, msg: msg}
		default:
			return msg
		}
	}
}

// toHost gives msg to host i and tags the Cmds it returns.
// Only the open host's panes are sized (layout renders them): a hidden
// host's are sized when it opens.
func (f *Fleet) toHost(i int, msg tea.Msg) tea.Cmd {
	next, cmd := f.hosts[i].update(msg)
	f.hosts[i] = next.(Model)
	if i == f.open {
		f.hosts[i].layout()
	}
	if f.hosts[i].quitMsg != "" {
		f.quitting = true // q in a host's dashboard quits the fleet
	}
	return wrapHost(i, cmd)
}

func (f Fleet) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg.(type) {
	case hostMsg:
	case repaintMsg:
		f.paint.pending, f.paint.due = false, true
		return f, nil
	default:
		f.paint.due = true
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		f.width, f.height = msg.Width, msg.Height
		for i := range f.hosts { // a host's dashboard sits below the fleet's breadcrumb line
			f.toHost(i, tea.WindowSizeMsg{Width: msg.Width, Height: max(msg.Height-1, 8)})
		}
		return f, nil
	case hostMsg:
		if msg.i < 0 || msg.i >= len(f.hosts) {
			return f, nil
		}
		cmd := f.toHost(msg.i, msg.msg)
		if _, due := msg.msg.(pollDue); due && msg.i != f.open {
			return f, cmd // a poll starting changes no row
		}
		if _, answer := msg.msg.(pollMsg); answer && !f.polling() {
			f.paint.due = true // the beat's last answer: every row is news now
			return f, cmd
		}
		return f, tea.Batch(cmd, f.repaint())
	case PromptMsg:
		f.prompts = append(f.prompts, msg)
		if f.input == nil {
			f.input = &lineInput{secret: msg.Secret}
		}
		return f, nil
	case tea.KeyPressMsg:
		return f.key(msg)
	case tea.ResumeMsg: // back from ctrl+z: repaint, and every host polls now
		cmds := []tea.Cmd{tea.ClearScreen}
		for i := range f.hosts {
			cmds = append(cmds, f.toHost(i, msg))
		}
		return f, tea.Batch(cmds...)
	}
	return f, nil
}

// modal says whether a host's dashboard has something open that esc
// closes or cancels (a dialog, a search, a box, a running task) before esc
// means back to the fleet.
func (m Model) modal() bool {
	return m.prompt != nil || m.input != nil || m.dialog != nil || m.help || m.away != nil || m.runs || len(m.busy) > 0
}

func (f Fleet) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if len(f.prompts) > 0 {
		return f.promptKey(k), nil
	}
	if len(f.hosts) == 0 {
		return f, tea.Quit
	}
	if f.open >= 0 { // a host's own dashboard has every key but back
		if key.Matches(k, f.keys.Back.Binding) && !f.hosts[f.open].modal() {
			f.open = -1
			return f, nil
		}
		cmd := f.toHost(f.open, k)
		if f.quitting {
			return f, tea.Quit
		}
		return f, cmd
	}
	km := f.keys
	h := &f.hosts[f.sel]
	if h.dialog != nil || h.stopsTask(k) { // the selected host's dialog or task answers
		cmd := f.toHost(f.sel, k)
		return f, cmd
	}
	if f.help {
		f.help = false
		if !key.Matches(k, km.Quit.Binding) {
			return f, nil
		}
	}
	switch {
	case key.Matches(k, km.Quit.Binding):
		f.quitting = true
		return f, tea.Quit
	case key.Matches(k, km.Help.Binding):
		f.help = true
	case key.Matches(k, km.Redraw.Binding):
		return f, tea.ClearScreen
	case key.Matches(k, km.Suspend.Binding):
		return f, tea.Suspend
	case key.Matches(k, km.Down.Binding):
		f.sel = min(f.sel+1, len(f.hosts)-1)
	case key.Matches(k, km.Up.Binding):
		f.sel = max(f.sel-1, 0)
	case key.Matches(k, km.Open.Binding):
		f.open = f.sel
		f.hosts[f.open].layout()
	case key.Matches(k, km.Number.Binding):
		if n := int(k.Text[0] - '1'); n < len(f.hosts) {
			f.sel, f.open = n, n
			f.hosts[n].layout()
		}
	case key.Matches(k, km.Launch.Binding), key.Matches(k, km.Kill.Binding), key.Matches(k, km.Resume.Binding),
		key.Matches(k, km.Restart.Binding), key.Matches(k, km.Reconnect.Binding), km.offKey(k.String()) != "":
		h.lastKey = f.cfg.Now() // the user is here: this key acts, it does not open "while you were away"
		cmd := f.toHost(f.sel, k)
		return f, cmd
	}
	return f, nil
}

// promptKey answers the oldest question; the next one, if any, is asked.
func (f Fleet) promptKey(k tea.KeyPressMsg) Fleet {
	p := f.prompts[0]
	switch {
	case key.Matches(k, f.keys.Enter.Binding):
		p.Reply <- f.input.text
	case key.Matches(k, f.keys.Cancel.Binding):
		p.Reply <- ""
	default:
		f.input.key(k, f.keys.keyMap)
		return f
	}
	f.prompts, f.input = f.prompts[1:], nil
	if len(f.prompts) > 0 {
		f.input = &lineInput{secret: f.prompts[0].Secret}
	}
	return f
}

// QuitMessage is what to print once the program ends: each host's line.
func (f Fleet) QuitMessage() string {
	if !f.quitting {
		return ""
	}
	var out []string
	for _, h := range f.hosts {
		out = append(out, h.quitMessage()+h.unfinished())
	}
	return strings.Join(out, "\n")
}

// Host is the dashboard of host i, for tests and harnesses.
func (f Fleet) Host(i int) Model { return f.hosts[i] }
