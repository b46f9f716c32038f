package tui

// The boxes drawn over the screen: the help, the news after a night away,
// and how a box is sized and laid over the body.

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// helpBox is the keymap's FullHelp, a row per binding, a blank line
// between groups; on a screen too low for that, the bindings' footer words
// in columns.
func (m Model) helpBox(w int) string {
	var rows []string
	for _, g := range m.keys.FullHelp() {
		if len(g) == 0 {
			continue
		}
		if len(rows) > 0 {
			rows = append(rows, "")
		}
		for _, b := range g {
			rows = append(rows, m.st.Key.Render(fit(b.Help().Key, 10))+" "+b.Help().Desc)
		}
	}
	if m.cfg.ReadOnly {
		var off []string
		for _, b := range m.keys.control() {
			off = append(off, b.Help().Key)
		}
		rows = append(rows, "", m.st.Warn.Render("read-only session: "+strings.Join(off, " ")+" (launch, kill, resume, restart) are off"))
	}
	if r := m.conn.ReaderText(); r != "" {
		rows = append(rows, "", m.st.Dim.Render("host read by: "+parse.SanitizeString(r)))
	}
	const chrome = 6 // border, title, blank lines, hint
	if len(rows)+chrome > max(m.height, 8) {
		rows = m.helpColumns(min(w-6, 76))
	}
	return m.box(w, "Keys", strings.Join(rows, "\n"), "any key: close")
}

// helpColumns is the compact help box: "key word" cells in columns.
func (m Model) helpColumns(inner int) []string {
	var cells []string
	for _, g := range m.keys.FullHelp() {
		for _, b := range g {
			cells = append(cells, m.st.Key.Render(fit(b.Help().Key, 7))+" "+fit(b.short, 11))
		}
	}
	cols := max(1, inner/20)
	var rows []string
	for i := 0; i < len(cells); i += cols {
		rows = append(rows, strings.Join(cells[i:min(i+cols, len(cells))], "  "))
	}
	if m.cfg.ReadOnly {
		rows = append(rows, m.st.Warn.Render("read-only: L K r R are off"))
	}
	if r := m.conn.ReaderText(); r != "" { // which agent reads the host: the short box says it too
		rows = append(rows, m.st.Dim.Render(fit("read by: "+parse.SanitizeString(r), inner)))
	}
	return rows
}

func (m Model) awayBox(w int) string {
	lines, more := awayLines(m.away, awayMax)
	body := strings.Join(lines, "\n")
	if more > 0 {
		body += fmt.Sprintf("\n… and %d more", more)
	}
	n := len(lines) + more
	if n == 0 {
		body = "nothing happened"
	}
	title := fmt.Sprintf("While you were away (%d events)", n)
	if n == 1 {
		title = "While you were away (1 event)"
	}
	return m.box(w, title, body, "any key: close")
}

// awayMax is how many lines the away summary shows before "… and N more".
const awayMax = 15

// awayLines is the "while you were away" summary of evs (oldest first, as
// the timeline keeps them): completions first, then everything else newest
// first, a run of link drops and reconnections as one line. It returns the
// lines that fit in max and how many more there are. A summary that spans
// more than a day shows dates.
func awayLines(evs []snapshot.Event, max int) (lines []string, more int) {
	var kept []snapshot.Event
	for _, e := range evs {
		if e.Kind != "action" { // the user's own doing: not news to them
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil, 0
	}
	layout := "15:04"
	if first, last := kept[0].Time.Local(), kept[len(kept)-1].Time.Local(); last.Sub(first) > 24*time.Hour || first.YearDay() != last.YearDay() || first.Year() != last.Year() {
		layout = "01-02 15:04"
	}
	var done, rest []string
	for i := len(kept) - 1; i >= 0; i-- {
		e := kept[i]
		if linkEvent(e.Kind) {
			j := i // the run of link events ending at i
			for j > 0 && linkEvent(kept[j-1].Kind) {
				j--
			}
			if i-j >= 1 {
				rest = append(rest, linkRun(kept[j:i+1], layout))
				i = j
				continue
			}
		}
		line := e.Time.Local().Format(layout) + "  " + eventText(e)
		if e.Kind == "pipeline_done" || e.Kind == "category_done" {
			done = append(done, "✓ "+line)
			continue
		}
		rest = append(rest, line)
	}
	all := append(done, rest...)
	if len(all) > max {
		return all[:max], len(all) - max
	}
	return all, 0
}

func linkEvent(kind string) bool { return kind == "disconnect" || kind == "reconnect" }

// linkRun is one line for a run of drops and reconnections:
// "link dropped 9 times, 08:56–08:58".
func linkRun(run []snapshot.Event, layout string) string {
	drops := 0
	for _, e := range run {
		if e.Kind == "disconnect" {
			drops++
		}
	}
	times := "once"
	if drops != 1 {
		times = fmt.Sprintf("%d times", drops)
	}
	first, last := run[0].Time.Local().Format(layout), run[len(run)-1].Time.Local().Format(layout)
	span := first
	if last != first {
		span += "–" + last
	}
	s := "link dropped " + times + ", " + span
	if drops == 0 {
		s = "connected again, " + span
	}
	if run[len(run)-1].Kind == "disconnect" {
		s += ", still down"
	}
	return s
}

// eventText is an event's text as a line: an empty reason reads as none.
func eventText(e snapshot.Event) string {
	t := strings.TrimSpace(e.Text)
	t = strings.TrimSuffix(t, ":") // "lost the link to the host: " (an old history)
	if t == "" {
		t = strings.ReplaceAll(e.Kind, "_", " ")
	}
	return t
}

func (m Model) box(w int, title, body, hint string) string {
	inner := boxWidth(w, title, body, hint)
	var parts []string
	for _, l := range strings.Split(ansi.Wrap(title, inner, ""), "\n") { // at word boundaries: a fingerprint is never split
		parts = append(parts, m.st.Bold.Render(l))
	}
	if body != "" {
		parts = append(parts, "", body)
	}
	parts = append(parts, "", m.st.Dim.Render(hint))
	return m.st.Dialog.Width(inner + 4).Render(strings.Join(parts, "\n"))
}

// boxWidth is a dialog's inner width: its widest line, between 40 columns
// and what the screen leaves.
func boxWidth(w int, texts ...string) int {
	widest := 40
	for _, t := range texts {
		for _, l := range strings.Split(t, "\n") {
			widest = max(widest, ansi.StringWidth(l))
		}
	}
	return max(1, min(widest, w-6))
}

// overlay puts box in the middle of body, line by line.
func overlay(body, box string, h int) string {
	bl := strings.Split(body, "\n")
	xl := strings.Split(box, "\n")
	start := max(0, (h-len(xl))/2)
	for i, l := range xl {
		if start+i < len(bl) {
			bl[start+i] = "  " + l
		}
	}
	return strings.Join(bl, "\n")
}
