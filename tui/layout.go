package tui

// layout sizes the panes for the screen and for what is drawn above and
// below the log pane (header lines, the category table, the server panel,
// the footer). Update runs it after every message, so the keys that scroll
// or jump in the log know the pane's real height; View draws at that size.
func (m *Model) layout() {
	w, h := max(m.width, 20), max(m.height, 8)
	wide := w >= 120 && h >= 40
	used := lines(m.header(w)) + lines(m.table(w, wide)) + lines(m.serverPanel(w, wide)) + lines(m.footer(w))
	m.logs.SetSize(w, max(h-used-1, 1))
}
