package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// View draws the fleet screen, or the open host's dashboard under a
// breadcrumb line.
func (f Fleet) View() tea.View {
	var view string
	if p := f.paint; p == nil {
		view = f.render()
	} else {
		if p.due || p.view == "" {
			p.view, p.due = f.render(), false
		}
		view = p.view
	}
	v := tea.NewView(view)
	v.AltScreen = true
	v.WindowTitle = fmt.Sprintf("synthwatch fleet (%d hosts)", len(f.hosts))
	return v
}

func (f Fleet) render() string {
	w, h := max(f.width, 20), max(f.height, 8)
	if f.open >= 0 {
		crumb := f.st.Title.Render("fleet") + f.st.Dim.Render(fmt.Sprintf(" › host %d of %d: %s · esc back to the fleet", f.open+1, len(f.hosts), sanitizeName(f.hosts[f.open].be.Host())))
		body := fit(crumb, w) + "\n" + f.hosts[f.open].render()
		return f.promptOver(body, w, h)
	}
	now := f.cfg.Now()
	rows := make([]fleetRow, len(f.hosts))
	for i, m := range f.hosts {
		rows[i] = m.row(now)
	}
	t := total(rows)
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = sanitizeName(r.name)
	}
	lay := newFleetLayout(w, names)
	out := []string{fit(f.st.Title.Render("synthwatch fleet")+"  "+f.st.Bold.Render(fmt.Sprintf("%d hosts", t.n))+f.st.Dim.Render(t.liveText()), w), ""}
	out = append(out, fit(f.st.Dim.Render(fleetCols(lay, "#", "HOST", "LINK", "WORKER", "DONE/TARGET", "REC/MIN", "TOK/S", "ETA", "KWH", map[bool]string{true: "ALERTS"}[lay.inline])), w))
	for i, r := range rows {
		out = append(out, f.rowLines(i, r, w, lay)...)
	}
	out = append(out, fit(f.st.Dim.Render(strings.Repeat("─", w)), w), fit(f.st.Bold.Render(f.totalLine(t, lay)), w))
	if !lay.inline && t.note != "" {
		out = append(out, fit("    "+t.note, w))
	}
	for len(out) < h-1 {
		out = append(out, "")
	}
	out = append(out[:h-1], f.footer(w))
	body := strings.Join(out, "\n")
	if f.help {
		return overlay(body, f.hosts[0].box(w, "Fleet keys", f.helpText(), "any key: close"), h)
	}
	if d := f.hosts[f.sel].dialog; d != nil { // the selected host's dialog, over the fleet, naming it
		hint := "y: yes   any other key: no (default)"
		if d.pid == -1 {
			hint = "any key: close"
		}
		title := sanitizeName(f.hosts[f.sel].be.Host()) + ": " + d.text
		return overlay(body, f.hosts[f.sel].box(w, title, "", hint), h)
	}
	return f.promptOver(body, w, h)
}

// promptOver draws the oldest open question over body.
func (f Fleet) promptOver(body string, w, h int) string {
	if len(f.prompts) == 0 {
		return body
	}
	return overlay(body, f.hosts[0].box(w, f.prompts[0].Text, "> "+f.input.view()+"▏", "enter to answer, esc to refuse"), h)
}

// fleetLayout is the fleet's columns for a screen width. Narrow screens
// leave out the bar's room and tok/s; alerts end the row where there is room
// (inline), else take a line of their own. HOST takes the room its longest
// name needs, up to what the other columns leave.
type fleetLayout struct {
	wide, inline bool
	host         int
}

func newFleetLayout(w int, names []string) fleetLayout {
	l := fleetLayout{wide: w >= 114, inline: w >= 140}
	rest := 63 // the other columns and their gaps
	l.host = 14
	if l.wide {
		l.host, rest = 18, 94
	}
	if l.inline {
		rest += 2 + 20 + 1 + 6 // the alerts' room, and the night's energy
	}
	longest := 0
	for _, n := range names {
		longest = max(longest, ansi.StringWidth(n))
	}
	if longest > l.host {
		l.host = max(l.host, min(longest, w-rest))
	}
	return l
}

// fleetCols lays out one row's cells (alerts != "": they end the row).
// The night's energy (kWh) has a column where the alerts do (inline).
func fleetCols(l fleetLayout, num, host, link, worker, prog, rec, tok, eta, kwh, alerts string) string {
	var s string
	if l.wide {
		s = fit(num, 3) + " " + fitMiddle(host, l.host) + " " + fit(link, 18) + " " + fit(worker, 20) + " " + fit(prog, 26) + " " +
			fitRight(rec, 7) + " " + fitRight(tok, 6) + " " + fitRight(eta, 7)
		if l.inline {
			s += " " + fitRight(kwh, 6)
		}
	} else {
		s = fit(num, 3) + " " + fitMiddle(host, l.host) + " " + fit(link, 14) + " " + fit(worker, 12) + " " + fit(prog, 15) + " " + fitRight(rec, 7) + " " + fitRight(eta, 6)
	}
	if alerts != "" {
		s += "  " + alerts
	}
	return s
}

func fitRight(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return fit(s, w)
}

// rowLines is host i's row (and, narrow, its alerts line).
func (f Fleet) rowLines(i int, r fleetRow, w int, lay fleetLayout) []string {
	wide, inline := lay.wide, lay.inline
	st, m := f.st, f.hosts[i]
	link := linkCell(m, r)
	worker := "-"
	if r.have {
		worker = string(m.snap.Worker.State)
		if m.snap.Worker.Category != "" {
			worker += " " + sanitizeName(m.snap.Worker.Category)
		}
	}
	prog := "-"
	if r.target > 0 {
		if wide {
			full, empty := bar(float64(r.done)/float64(r.target), 10)
			prog = full + empty + " "
		} else {
			prog = ""
		}
		prog += thousands(r.done) + "/" + thousands(r.target)
	}
	rec, tok, eta := "-", "-", r.etaText()
	if !r.stale {
		rec, tok = fmt.Sprintf("%.1f", r.recMin), fmt.Sprintf("%.0f", r.tokS)
	}
	al := strings.Join(r.alerts, ", ")
	num := fmt.Sprint(i + 1)
	if i == f.sel {
		num = "›" + num // the selection shows without colour too
	}
	line := fleetCols(lay, num, sanitizeName(r.name), link, worker, prog, rec, tok, eta, r.kwhText(), map[bool]string{true: al}[inline])
	switch {
	case i == f.sel:
		line = st.Selected.Render(fit(line, w))
	case r.stale:
		line = st.Stale.Render(line)
	}
	out := []string{fit(line, w)}
	if !inline && al != "" {
		out = append(out, fit("    "+st.Bad.Render("! "+al), w))
	}
	return out
}

// linkCell is the link's state, its round trip and the age of its last
// contact, where that is more than a poll old.
func linkCell(m Model, r fleetRow) string {
	c := m.conn
	switch {
	case !c.Linked():
		return "local"
	case c.State == snapshot.LinkConnected && !r.stale:
		t := "● up"
		if rtt := c.RTT(); rtt > 0 {
			t += " " + rtt.Round(100*time.Microsecond).String()
		}
		return t
	case c.State == snapshot.LinkFailed:
		return "✖ failed"
	case r.age > 0:
		return "⚠ stale " + dur(r.age) + " ago"
	case c.State == snapshot.LinkConnected:
		return "● up, no poll yet"
	}
	return "⚠ " + string(c.State)
}

func (f Fleet) totalLine(t fleetTotal, lay fleetLayout) string {
	wide, inline := lay.wide, lay.inline
	prog := "-"
	if t.target > 0 {
		prog = ""
		if wide {
			full, empty := bar(float64(t.done)/float64(t.target), 10)
			prog = full + empty + " "
		}
		prog += thousands(t.done) + "/" + thousands(t.target)
	}
	return fleetCols(lay, "", "fleet", fmt.Sprintf("%d/%d live", t.up, t.n), "", prog, fmt.Sprintf("%.1f", t.recMin), fmt.Sprintf("%.0f", t.tokS), t.etaText(), t.kwhText(), map[bool]string{true: t.note}[inline])
}

func (f Fleet) footer(w int) string {
	if h := f.hosts[f.sel]; h.flash != "" && f.cfg.Now().Before(h.flashUntil) { // a key read-only turned off, pressed here
		return fit(f.st.Warn.Render(h.flash), w)
	}
	var keys []string
	if f.cfg.ReadOnly {
		keys = append(keys, "read-only")
	}
	for _, b := range f.keys.ShortHelp(w) {
		keys = append(keys, b.Help().Key+" "+b.short)
	}
	return fit(f.st.Dim.Render(strings.Join(keys, " · ")), w)
}

func (f Fleet) helpText() string {
	var out []string
	for _, g := range f.keys.groups() {
		for _, b := range enabled(g) {
			out = append(out, fit(f.st.Key.Render(b.Help().Key), 10)+" "+b.Help().Desc)
		}
		out = append(out, "")
	}
	out = append(out, "In a host's dashboard every key is its own; esc comes back here.")
	return strings.Join(out, "\n")
}
