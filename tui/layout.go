package tui

import (
	"fmt"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// layout sizes the panes for the screen and for what is drawn above and
// below the log pane (header lines, the category table, the server panel,
// the footer). Update runs it after every message, so the keys that scroll
// or jump in the log know the pane's real height; View draws at that size.
func (m *Model) layout() {
	w, h := max(m.width, 20), max(m.height, 8)
	m.scrollTable(h)
	wide := w >= 120 && h >= 40
	used := lines(m.header(w)) + lines(m.table(w, wide)) + lines(m.serverPanel(w, wide)) + lines(m.footer(w))
	m.logs.SetSize(w, max(h-used-1, 1))
}

// tableRows is how many category rows the table shows on a screen h high:
// all of them while they fit in half of it, else that half, a window that
// follows the selection. Drawing only those keeps a key and a poll's
// repaint the cost of a screen, not of the root: 50,000 rows drawn twice
// a frame took 2–3 s a key.
func tableRows(n, h int) int { return min(n, max(h/2, 5)) }

// scrollTable moves the table's window as little as keeps sel in view.
func (m *Model) scrollTable(h int) {
	n := len(m.snap.Categories)
	rows := tableRows(n, h)
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+rows {
		m.top = m.sel - rows + 1
	}
	m.top = max(0, min(m.top, n-rows))
}

// tableWindow is the rows the table draws and the index of the first.
func (m Model) tableWindow() (top int, shown []snapshot.Category) {
	all := m.snap.Categories
	top = min(m.top, len(all)) // layout clamped it; a model never laid out has 0
	return top, all[top:min(len(all), top+tableRows(len(all), max(m.height, 8)))]
}

// windowLine says which rows of how many the table shows.
func windowLine(top, shown, n int) string {
	return fmt.Sprintf("  %s–%s of %s categories (j/k to scroll)", thousands(int64(top+1)), thousands(int64(top+shown)), thousands(int64(n)))
}
