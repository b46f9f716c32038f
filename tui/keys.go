package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
)

// binding is one row of the keymap: the keys and their help (key.Binding:
// Help().Key is how the keys are written, Help().Desc the help box's line)
// and the footer's word for it.
type binding struct {
	key.Binding
	short string
}

func bind(short, help, desc string, keys ...string) binding {
	return binding{Binding: key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc)), short: short}
}

// keyMap is every key the dashboard knows, in one table: Update matches
// against it, the footer draws ShortHelp and the help box FullHelp, and the
// README's key list is checked against it. Read-only mode disables the
// bindings that change the host.
type keyMap struct {
	Down, Up, PageDown, PageUp binding
	Pane, Tabs                 binding
	Search, Next, Prev, Error  binding
	Follow, Wrap               binding
	Launch, Kill, Resume       binding
	Restart, Reconnect, Stop   binding
	Runs, Servers, Notes       binding
	Help, Redraw, Suspend      binding
	Quit                       binding

	// in a dialog, a line input or a prompt (their hints say so)
	Yes, Enter, Cancel, Backspace binding
}

func newKeyMap(readOnly bool) keyMap {
	k := keyMap{
		Down:      bind("down", "j/↓", "select the next category (or scroll the log)", "j", "down"),
		Up:        bind("up", "k/↑", "select the previous category (or scroll the log)", "k", "up"),
		PageDown:  bind("page down", "pgdown", "scroll the log 10 lines down", "pgdown"),
		PageUp:    bind("page up", "pgup", "scroll the log 10 lines up", "pgup"),
		Pane:      bind("pane", "tab", "next pane (table, log)", "tab"),
		Tabs:      bind("log tabs", "1 2 3", "worker log, server log, events", "1", "2", "3"),
		Search:    bind("search", "/", "search the log", "/"),
		Next:      bind("next", "n", "next match", "n"),
		Prev:      bind("previous", "N", "previous match", "N"),
		Error:     bind("error", "e", "jump to the next error or traceback", "e"),
		Follow:    bind("follow", "f", "follow / pause the log", "f"),
		Wrap:      bind("wrap", "w", "toggle wrap", "w"),
		Launch:    bind("launch", "L", "launch the worker (confirm)", "L"),
		Kill:      bind("kill", "K", "kill the worker (confirm, default No)", "K"),
		Resume:    bind("resume", "r", "resume the worker (confirm)", "r"),
		Restart:   bind("restart", "R", "restart the selected category first (confirm)", "R"),
		Reconnect: bind("reconnect", "C", "reconnect now", "C"),
		Runs:      bind("runs", "H", "run history of the selected category", "H"),
		Servers:   bind("server", "s", "open / close the wide server panel (latency, replicas)", "s"),
		Stop:      bind("stop", "esc", "cancel the running action (ctrl+c too, while it runs)", "esc", "ctrl+c"),
		Notes:     bind("messages", "m", "the header's messages in full (a fix command the header cut)", "m"),
		Help:      bind("help", "?", "this help", "?"),
		Redraw:    bind("redraw", "ctrl+l", "repaint the whole screen", "ctrl+l"),
		Suspend:   bind("suspend", "ctrl+z", "suspend to the shell (fg comes back, repainted; the worker goes on)", "ctrl+z"),
		Quit:      bind("quit", "q", "quit (the worker is left as it is; never waits for the link)", "q", "ctrl+c"),

		Yes:       bind("yes", "y", "yes, in a dialog (anything else is no)", "y", "Y"),
		Enter:     bind("enter", "enter", "search, or answer a question", "enter"),
		Cancel:    bind("cancel", "esc", "cancel a search, refuse a question", "esc", "ctrl+c"),
		Backspace: bind("delete", "backspace", "delete a character", "backspace"),
	}
	for _, b := range k.control() {
		b.SetEnabled(!readOnly)
	}
	return k
}

// control is the bindings that change the host: off in a read-only session.
func (k *keyMap) control() []*binding {
	return []*binding{&k.Launch, &k.Kill, &k.Resume, &k.Restart}
}

// offKey is the footer's word for a key that read-only mode turned off,
// or "" when k is not one of them.
func (k keyMap) offKey(pressed string) string {
	for _, b := range k.control() {
		if !b.Enabled() && slices.Contains(b.Keys(), pressed) {
			return pressed + " (" + b.short + ") is off: --read-only"
		}
	}
	return ""
}

// ShortHelp is the footer for a screen w columns wide: the most useful keys
// first, more as the screen widens (each set fits its width); disabled
// ones are left out.
func (k keyMap) ShortHelp(w int) []binding {
	var out []binding
	if w >= 160 {
		out = append(out, k.Down, k.Up, k.Pane, k.Tabs)
	}
	out = append(out, k.Launch, k.Kill, k.Resume, k.Restart, k.Search)
	if w >= 120 {
		out = append(out, k.Error, k.Follow, k.Reconnect)
	}
	if w >= 180 {
		out = append(out, k.Wrap)
	}
	return enabled(append(out, k.Help, k.Quit))
}

// groups is every binding of the main screen, in the help box's groups:
// moving, the log, the host, the program.
func (k keyMap) groups() [][]binding {
	return [][]binding{
		{k.Down, k.Up, k.PageDown, k.PageUp, k.Pane, k.Tabs, k.Runs, k.Servers},
		{k.Search, k.Next, k.Prev, k.Error, k.Follow, k.Wrap},
		{k.Launch, k.Kill, k.Resume, k.Restart, k.Reconnect, k.Stop},
		{k.Notes, k.Help, k.Redraw, k.Suspend, k.Quit},
	}
}

// FullHelp is the help box; disabled bindings are left out (the box says
// why).
func (k keyMap) FullHelp() [][]binding {
	groups := k.groups()
	for i, g := range groups {
		groups[i] = enabled(g)
	}
	return groups
}

// all is every binding of the main screen, enabled or not.
func (k keyMap) all() []binding {
	var out []binding
	for _, g := range k.groups() {
		out = append(out, g...)
	}
	return out
}

func enabled(bs []binding) []binding {
	var out []binding
	for _, b := range bs {
		if b.Enabled() {
			out = append(out, b)
		}
	}
	return out
}

// fleetKeyMap is the fleet screen's keys: the dashboard's (j k L K r R C
// ? q act on the selected host), and a host's dashboard to open and leave.
type fleetKeyMap struct {
	keyMap
	Open, Number, Back binding
}

func newFleetKeyMap(readOnly bool) fleetKeyMap {
	return fleetKeyMap{keyMap: newKeyMap(readOnly),
		Open:   bind("open", "enter", "fleet: open the selected host's dashboard", "enter"),
		Number: bind("host", "1…9", "fleet: open host 1 to 9's dashboard", "1", "2", "3", "4", "5", "6", "7", "8", "9"),
		Back:   bind("fleet", "esc", "fleet: back from a host's dashboard to the fleet", "esc"),
	}
}

// ShortHelp is the fleet screen's footer.
func (k fleetKeyMap) ShortHelp(w int) []binding {
	out := []binding{k.Down, k.Up, k.Open, k.Number, k.Launch, k.Kill, k.Resume, k.Restart}
	if w >= 120 {
		out = append(out, k.Reconnect)
	}
	return enabled(append(out, k.Help, k.Quit))
}

// groups is the fleet screen's help box.
func (k fleetKeyMap) groups() [][]binding {
	return [][]binding{
		{k.Down, k.Up, k.Open, k.Number, k.Back},
		{k.Launch, k.Kill, k.Resume, k.Restart, k.Reconnect, k.Stop},
		{k.Notes, k.Help, k.Redraw, k.Suspend, k.Quit},
	}
}

// KeyList is the key list as the README writes it, a Markdown table row
// per binding, the fleet's own keys last. A test keeps the README in step
// with it.
func KeyList() []string {
	out := []string{"| key | does |", "| --- | --- |"}
	fk := newFleetKeyMap(false)
	for _, b := range append(fk.all(), fk.Open, fk.Number, fk.Back) {
		out = append(out, "| `"+strings.Join(b.Keys(), "` `")+"` | "+b.Help().Desc+" |")
	}
	return out
}
