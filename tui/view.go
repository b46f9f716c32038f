package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// View draws the screen; at 80×24 a compact layout, from 120×40 everything.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "synthwatch " + m.be.Host()
	return v
}

// stale is true when the figures may be old: the link is not up, or it
// has not answered within two polls (snapshot.Connection.Quiet).
func (m Model) stale() bool {
	return m.conn.Quiet(m.cfg.Now(), m.cfg.PollEvery)
}

// lastContact is when the host last answered; zero: never.
func lastContact(c snapshot.Connection) time.Time {
	if c.LastContact == nil {
		return time.Time{}
	}
	return *c.LastContact
}

func (m Model) render() string {
	w, h := max(m.width, 20), max(m.height, 8)
	wide := w >= 120 && h >= 40
	header := m.header(w)
	footer := m.footer(w)
	table := m.table(w, wide)
	server := m.serverPanel(w, wide)
	// the log pane was sized in Update (layout), so keys and the view agree
	body := strings.Join([]string{header, table, server, m.logs.View(m.st, m.focus == focusLog), footer}, "\n")
	switch {
	case m.prompt != nil:
		return overlay(body, m.box(w, m.prompt.Text, "> "+m.input.view()+"▏", "enter to answer, esc to refuse"), h)
	case m.dialog != nil:
		hint := "y: yes   any other key: no (default)"
		if m.dialog.pid == -1 {
			hint = "any key: close"
		}
		return overlay(body, m.box(w, m.dialog.text, "", hint), h)
	case m.input != nil:
		return overlay(body, m.box(w, "Search the log:", "/"+m.input.view()+"▏", "enter to search, esc to cancel"), h)
	case m.away != nil:
		return overlay(body, m.awayBox(w), h)
	case m.help:
		return overlay(body, m.helpBox(w), h)
	case m.notesOpen:
		return overlay(body, m.notesBox(w), h)
	case m.runs:
		return overlay(body, m.runsBox(w), h)
	}
	return body
}

func lines(s string) int { return strings.Count(s, "\n") + 1 }

func (m Model) header(w int) string {
	st := m.st
	s := m.snap
	parts := []string{st.Title.Render("synthwatch"), st.Bold.Render(m.be.Host())}
	if c := m.conn; c.Linked() {
		lc := lastContact(c)
		switch c.State {
		case snapshot.LinkConnected:
			if m.stale() { // up, but no answer within two polls: not "connected"
				t := "◌ no answer yet"
				if !lc.IsZero() {
					t = fmt.Sprintf("◌ last contact %s ago", dur(m.cfg.Now().Sub(lc)))
				}
				parts = append(parts, st.Warn.Render(t))
				break
			}
			t := st.OK.Render("● connected")
			if rtt := c.RTT(); rtt > 0 { // measured by the first keepalive
				t += st.Dim.Render(fmt.Sprintf(" rtt %s", rtt.Round(100*time.Microsecond)))
			}
			parts = append(parts, t)
		case snapshot.LinkFailed:
			parts = append(parts, st.Bad.Render("✖ CANNOT CONNECT (not retried)"))
		default:
			t := fmt.Sprintf("⚠ %s", strings.ToUpper(string(c.State)))
			if lc.IsZero() && (c.Attempt > 0 || c.Error != "") {
				t = "⚠ NOT CONNECTED"
			}
			if c.Attempt > 0 {
				t += fmt.Sprintf(" (attempt %d)", c.Attempt)
			}
			if !lc.IsZero() {
				t += fmt.Sprintf(": last contact %s ago, figures are stale", dur(m.cfg.Now().Sub(lc)))
			} else if c.Attempt > 0 || c.Error != "" {
				t += ": never connected"
			}
			parts = append(parts, st.Bad.Render(t))
		}
	} else {
		parts = append(parts, st.Dim.Render("local"))
	}
	wk := "worker " + string(s.Worker.State)
	if s.Worker.State == snapshot.WorkerNone {
		wk = "worker never ran here" // no worker.json, no log, no writer: not "stopped", not "died"
	}
	if s.Worker.PID > 0 {
		wk += fmt.Sprintf(" pid %d", s.Worker.PID)
	}
	if s.Worker.Category != "" {
		wk += " " + sanitizeName(s.Worker.Category)
	}
	if s.Worker.ByYou {
		wk += " (by you)"
	}
	if d := StoppingText(s); d != "" {
		wk += " " + d
	}
	switch s.Worker.State {
	case snapshot.WorkerRunning:
		wk = st.OK.Render(wk)
	case snapshot.WorkerDied, snapshot.WorkerStalled:
		wk = st.Bad.Render(wk)
	}
	parts = append(parts, wk)
	if win := windowText(s); win != "" {
		parts = append(parts, win)
	}
	eta := "-"
	if !m.stale() {
		eta = snapshot.ETAText(s) // "?" or what is known: work is left but no whole figure
		if s.ETASeconds == nil && (len(s.Categories) == 0 || allFinal(s)) {
			eta = "-"
		}
	}
	if done := doneLine(s); done != "" && !m.stale() {
		parts = append(parts, st.OK.Render(done))
	} else {
		parts = append(parts, "ETA "+eta)
	}
	if tok := m.tokensPart(s); tok != "" {
		parts = append(parts, tok)
	}
	if c := s.Capture; c != nil { // the next stage's disk (parse.ForecastCapture); m says it whole
		t := "next stage " + parse.FormatBytes(c.Bytes)
		if c.Partial {
			t = "next stage ≥" + parse.FormatBytes(c.Bytes)
		}
		if c.Fits != nil && !*c.Fits {
			t = st.Bad.Render(t + " (won't fit)")
		}
		parts = append(parts, t)
	}
	parts = appendSpend(parts, s.Spend) // the night's energy; the run history says it whole
	if label := m.busyLabel(); label != "" {
		spin := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}[m.spin%10]
		parts = append(parts, st.Accent.Render(spin+" "+label))
	}
	line := flow(parts, w)
	for _, n := range m.notes() {
		if ansi.StringWidth(n) > w && w > 8 {
			n = ansi.Truncate(n, w, "… (m)") // cut: m shows it whole
		}
		line += "\n" + fit(n, w)
	}
	return line
}

// windowText is the live worker's window on its category and why it last
// moved, in the progress line's words: "window 212 ↑ queue empty; KV 71 %",
// "window 150 (fixed)"; "" when no worker keeps one.
func windowText(s snapshot.Snapshot) string {
	for _, c := range s.Categories {
		if c.Name != s.Worker.Category || c.Window <= 0 {
			continue
		}
		why := sanitizeName(c.WindowReason) // the host's worker.json
		if why == "fixed" {
			why = "(fixed)"
		}
		txt := strings.TrimSpace(fmt.Sprintf("window %d %s", c.Window, why))
		if c.Yielded > 0 {
			txt += fmt.Sprintf(" · %d requests yielded in all", c.Yielded)
		}
		return txt
	}
	return ""
}

// notes are the header's lines under its first (the link's error, the
// last action's result, the host's warnings), styled: the header cuts
// each to the screen, the notes box (m) shows them whole.
func (m Model) notes() []string {
	st, s := m.st, m.snap
	var out []string
	if why := m.linkError(); why != "" {
		out = append(out, st.Bad.Render(why))
	}
	if m.result != "" {
		r := m.result
		switch m.resultState {
		case resultOK:
			r = st.OK.Render("✓ " + r)
		case resultCancelled:
			r = st.Warn.Render("⚠ " + r)
		default:
			r = st.Bad.Render("✖ " + r)
		}
		out = append(out, r)
	}
	if c := s.Capture; c != nil && c.Fits != nil && !*c.Fits {
		out = append(out, st.Warn.Render("⚠ "+c.Text()))
	}
	for _, warn := range s.Alerts {
		switch warn.Kind {
		case snapshot.WarnNoContact:
			if m.conn.Linked() && (m.conn.State == snapshot.LinkConnected || m.conn.LastContact == nil) {
				continue // the link is up again, or the header says "never connected"
			}
		case snapshot.WarnWorkerJSONStale, snapshot.WarnUnreadable:
		case snapshot.WarnManifest:
			out = append(out, st.Bad.Render("✖ "+parse.SanitizeString(warn.Text)))
			continue
		default:
			continue // category warnings stand beside their rows; the root's in place of the table
		}
		out = append(out, st.Warn.Render("⚠ "+parse.SanitizeString(warn.Text)))
	}
	return out
}

// notesBox is the header's notes whole, each wrapped at word boundaries
// (a fix command or a fingerprint is never split).
func (m Model) notesBox(w int) string {
	notes := m.notes()
	body := "nothing to say"
	if len(notes) > 0 {
		inner := boxWidth(w, notes...)
		var wrapped []string
		for _, n := range notes {
			wrapped = append(wrapped, ansi.Wrap(n, inner, ""))
		}
		body = strings.Join(wrapped, "\n\n")
	}
	return m.box(w, "Messages", body, "any key: close")
}

// StoppingText is what a live worker that was asked to stop does meanwhile
// (worker.json's "stopping"): it drains the requests in flight, as many as
// the server runs and queues, for up to its grace. "" otherwise.
func StoppingText(s snapshot.Snapshot) string {
	if s.Worker.Phase != parse.WorkerStopping || !snapshot.Alive(s.Worker.State) {
		return ""
	}
	if s.Server.Source == "" {
		return "stopping (draining the requests in flight)"
	}
	return fmt.Sprintf("stopping (draining %d requests)", s.Server.RunningReqs+s.Server.QueueReqs)
}

func (m Model) table(w int, wide bool) string {
	st := m.st
	nameW, barW, sparkW, tokW, passW := tableWidths(w, m.snap.Categories)
	cols := func(name, class, done, pass, tok, bar, rate, sp, eta, errs, state string) string {
		row := fit(name, nameW) + " " + fit(class, 5) + " " + fit(done, 13) + " "
		if passW > 0 {
			row += fit(pass, passW) + " "
		}
		if tokW > 0 {
			row += fit(tok, tokW) + " "
		}
		row += fit(bar, barW) + " " + fit(rate, 7) + " "
		if sparkW > 0 {
			row += fit(sp, sparkW) + " "
		}
		return row + fit(eta, 6) + " " + fit(errs, 5) + " " + fit(state, 8)
	}
	out := []string{st.Dim.Render(cols("CATEGORY", "CLASS", "DONE/TARGET", "PASS", "TOKENS", "PROGRESS", "RATE/m", "RATE", "ETA", "ERR", "STATE"))}
	stale := m.stale()
	top, shown := m.tableWindow()
	for j, c := range shown {
		i := top + j
		frac := c.Progress // by the cap that comes first: records or tokens
		if frac == 0 && c.Target > 0 {
			frac = float64(c.Done) / float64(c.Target) // a snapshot from before progress was sent
		}
		full, empty := bar(frac, barW)
		rate, eta := fmt.Sprintf("%.1f", c.RatePerMin), etaText(c.ETASeconds)
		if stale {
			eta = "-"
		}
		state := string(c.State)
		row := cols(sanitizeName(c.Name), c.Class, fmt.Sprintf("%d/%d", c.Done, c.Target), c.Gate.PassCell(), m.tokCell(c, tokW, stale), full+empty, rate, spark(c.Rates, sparkW), eta, fmt.Sprint(c.Errors), state)
		if extra := w - ansi.StringWidth(row) - 3; len(c.Configs) > 1 && extra > 10 {
			row += " " + st.Dim.Render(ansi.Truncate(snapshot.ConfigLine(c.Configs), extra, "…"))
		}
		if extra := w - ansi.StringWidth(row) - 3; c.Reason != "" && extra > 10 {
			row += " " + ansi.Truncate(sanitizeName(c.Reason), extra, "…") // why it is stalled, stopped or died: status's words
		}
		if extra := w - ansi.StringWidth(row) - 3; len(c.Warnings) > 0 && extra > 10 {
			row += " " + st.Warn.Render(ansi.Truncate("⚠ "+c.Warnings[0], extra, "…"))
		}
		switch {
		case stale:
			row = st.Stale.Render(row)
		case i == m.sel && m.focus == focusTable:
			row = st.Selected.Render(row)
		case c.State == snapshot.StateStalled || c.State == snapshot.StateFailed || c.State == snapshot.StateDied:
			row = st.Bad.Render(row)
		case c.State == snapshot.StateRunning:
			row = st.OK.Render(row)
		case snapshot.Final(c.State):
			row = st.Dim.Render(row)
		}
		out = append(out, fit(row, w))
	}
	if n := len(m.snap.Categories); len(shown) < n {
		out = append(out, st.Dim.Render(fit(windowLine(top, len(shown), n), w)))
	}
	for _, l := range overCapLines(m.snap.Categories, shown) {
		out = append(out, st.Warn.Render(fit(l, w)))
	}
	for _, l := range gateLines(m.snap.Categories, shown) {
		out = append(out, st.Warn.Render(fit(l, w)))
	}
	if len(m.snap.Categories) == 0 {
		msg := "no categories found yet"
		switch {
		case m.rootProblem() != "":
			out = append(out, st.Bad.Render(ansi.Wrap("✖ "+m.rootProblem(), w, " ")))
			return strings.Join(out, "\n")
		case m.conn.Stale():
			msg = "no categories: the host has not been read yet"
		case !m.haveSnap:
			msg = "connecting…"
		}
		out = append(out, st.Dim.Render(msg))
	}
	return strings.Join(out, "\n")
}

// linkError is why the link is down and when it tries again: the last
// dial, handshake or auth error, for as long as the link is not up.
func (m Model) linkError() string {
	c := m.conn
	if !c.Stale() || c.Error == "" {
		return ""
	}
	t := "✖ " + parse.SanitizeString(c.Error)
	switch {
	case c.State == snapshot.LinkFailed:
		t += " (fix it, then press C)"
	case c.NextTry != nil && c.NextTry.After(m.cfg.Now()):
		t += "; next try in " + dur(c.NextTry.Sub(m.cfg.Now()))
	case c.State == snapshot.LinkReconnecting:
		t += "; trying again now"
	}
	return t
}

// rootProblem is the line that says the root is no pipeline root.
func (m Model) rootProblem() string {
	for _, w := range m.snap.Alerts {
		if w.Kind == snapshot.WarnRoot {
			return w.Text
		}
	}
	return ""
}

// RootWarning begins the text of the warning (kind snapshot.WarnRoot) a
// Backend adds for a root without prepared/.
const RootWarning = "no pipeline root at "

// sanitizeName keeps a hostile category name on one safe line.
func sanitizeName(s string) string { return parse.SanitizeString(s) }

func (m Model) serverPanel(w int, wide bool) string {
	st := m.st
	sv := m.snap.Server
	state := m.stateWord(sv.State)
	label := "server"
	if len(m.snap.Servers) > 0 {
		label = "servers" // the host's total; one line each follows
	}
	full, empty := bar(sv.TokenUsage, 10)
	sparkW := 8
	if wide {
		sparkW = 24
	}
	line := fmt.Sprintf("%s %s  gen %.0f tok/s %s  running %d  queued %d  KV %s%s %.0f%%", label, state, sv.GenThroughput, spark(sv.Throughput, sparkW),
		sv.RunningReqs, sv.QueueReqs, st.Bar.Render(full), st.BarEmpty.Render(empty), 100*sv.TokenUsage)
	if sv.Source == "" { // no metrics and no log figures: unknowns, not zeros
		line = fmt.Sprintf("%s %s  gen - tok/s %s  running -  queued -  KV -", label, state, spark(sv.Throughput, sparkW))
	}
	if idle := snapshot.IdleText(sv); idle != "" { // the last batch's figures, with their time: not now's
		line = fmt.Sprintf("%s %s %s", label, st.OK.Render(idle), spark(sv.Throughput, sparkW))
	}
	if sv.CacheHitRate != nil {
		line += fmt.Sprintf("  hit %.0f%%", 100**sv.CacheHitRate)
	}
	if sv.Retractions > 0 {
		line += fmt.Sprintf("  retractions %d", sv.Retractions)
	}
	if sv.Source != "" {
		line += st.Dim.Render("  (" + snapshot.FiguresLabel(sv) + ")")
	}
	if m.stale() {
		line = st.Stale.Render(ansi.Strip(line))
	}
	out := fit(line, w)
	for _, l := range m.serverLines(w) {
		out += "\n" + l
	}
	if bl := m.baselineLine(w); bl != "" {
		out += "\n" + bl
	}
	if vl := m.vitalsLine(w); vl != "" {
		out += "\n" + vl
	}
	if sv.Reason != "" && snapshot.ServerTrouble(sv.State) && sv.State != snapshot.ServerCrashed {
		out += "\n" + fit(st.Bad.Render(string(sv.State)+": "+parse1(sv.Reason)+probedURL(sv)), w)
	} else if wide && sv.URL != "" {
		out += "\n" + fit(st.Dim.Render("probed"+probedURL(sv)), w)
	}
	if sv.LastCrash != "" && (wide || sv.State == snapshot.ServerCrashed) {
		out += "\n" + fit(st.Bad.Render("last crash: "+parse1(sv.LastCrash)), w)
	}
	for _, l := range m.serverFigureLines(w, m.figureBudget(w, wide, out)) {
		out += "\n" + l
	}
	return out
}

// footer is the keymap's ShortHelp for the width; a read-only session
// says so first (its control keys are disabled, so not listed).
func (m Model) footer(w int) string {
	if m.flash != "" && m.cfg.Now().Before(m.flashUntil) {
		return fit(m.st.Warn.Render(m.flash), w)
	}
	var keys []string
	if m.cfg.ReadOnly {
		keys = append(keys, "read-only")
	}
	for _, b := range m.keys.ShortHelp(w) {
		keys = append(keys, b.Help().Key+" "+b.short)
	}
	return fit(m.st.Dim.Render(strings.Join(keys, " · ")), w)
}

// flow joins parts with two spaces, starting a new line where the next part
// would not fit, so nothing in the header is cut at 80 columns.
func flow(parts []string, w int) string {
	var out []string
	cur := ""
	for _, p := range parts {
		switch {
		case cur == "":
			cur = p
		case ansi.StringWidth(cur)+2+ansi.StringWidth(p) <= w:
			cur += "  " + p
		default:
			out = append(out, fit(cur, w))
			cur = p
		}
	}
	return strings.Join(append(out, fit(cur, w)), "\n")
}

// doneLine is the header's news after a night away: "✓ pipeline done
// 08:18 (1,948 records)" once the job has finished (pipeline_done), and
// nothing before.
func doneLine(s snapshot.Snapshot) string {
	if !allFinal(s) || snapshot.Alive(s.Worker.State) {
		return ""
	}
	var at time.Time
	for _, e := range s.Events {
		if e.Kind == "pipeline_done" {
			at = e.Time
		}
	}
	if at.IsZero() {
		return ""
	}
	var n int64
	for _, c := range s.Categories {
		n += c.Done
	}
	return fmt.Sprintf("✓ pipeline done %s (%s records)", at.Local().Format("01-02 15:04"), thousands(n))
}

// thousands writes n with commas: 1,948 (parse.Thousands).
func thousands(n int64) string { return parse.Thousands(n) }
