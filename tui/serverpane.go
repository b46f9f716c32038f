package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// serverFigureLines are the server TUIs' figures under the server lines:
// closed, a latency line and a line of spec decode, KV dtype, replicas and
// the slow one; opened with the server key, a percentile table and a row
// per replica, as many as the screen's height leaves (budget lines).
func (m Model) serverFigureLines(w, budget int) []string {
	sv := m.snap.Server
	if sv.Latency == nil && sv.Spec == nil && sv.KVCacheDType == "" && len(sv.Rows) == 0 {
		return nil
	}
	var out []string
	if m.serverWide {
		out = m.wideFigures(sv, w, budget)
	} else {
		out = m.narrowFigures(sv, w)
	}
	if m.stale() {
		for i, l := range out {
			out[i] = m.st.Stale.Render(ansi.Strip(l))
		}
	}
	return out
}

func (m Model) narrowFigures(sv snapshot.Server, w int) []string {
	st := m.st
	var out []string
	if l := sv.Latency.Line(); l != "" {
		out = append(out, fit(l, w))
	}
	var parts []string // what a narrow screen must not cut first
	if im := sv.Imbalance; im != nil {
		parts = append(parts, st.Warn.Render("⚠ slow: "+parse1(im.Replica)))
	}
	if len(sv.Rows) > 0 {
		parts = append(parts, rowCounts(sv.Rows))
	}
	if t := sv.Spec.Text(); t != "" {
		parts = append(parts, t)
	}
	if sv.KVCacheDType != "" {
		parts = append(parts, "KV "+sv.KVCacheDType)
	}
	parts = append(parts, st.Dim.Render(m.keys.Servers.Help().Key+": more"))
	return append(out, fit(strings.Join(parts, "  "), w))
}

// rowCounts is "3 replicas: 2 up, 1 STALE".
func rowCounts(rows []snapshot.ReplicaRow) string {
	n := map[string]int{}
	var order []string
	for _, r := range rows {
		if n[r.State] == 0 {
			order = append(order, r.State)
		}
		n[r.State]++
	}
	var parts []string
	for _, s := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
	}
	return fmt.Sprintf("%d replicas: %s", len(rows), strings.Join(parts, ", "))
}

// wideFigures is the opened panel. Lines beyond budget are left out, the
// replica rows first, with a line that says how many.
func (m Model) wideFigures(sv snapshot.Server, w, budget int) []string {
	st := m.st
	var out []string
	if l := sv.Latency; l != nil {
		if w >= 120 {
			out = append(out, st.Dim.Render(fit("latency", 14)+fit("p50", 9)+fit("p90", 9)+fit("p99", 9)+fit("n", 9)+"over "+l.ScopeText()))
			for _, k := range l.Kinds() {
				cells := "-"
				if k.P != nil {
					cells = fit(snapshot.FormatSeconds(k.P.P50), 9) + fit(snapshot.FormatSeconds(k.P.P90), 9) + fit(snapshot.FormatSeconds(k.P.P99), 9) + fmt.Sprintf("%.0f", k.P.Count)
				}
				out = append(out, fit("  "+k.Name, 14)+cells)
			}
		} else { // two kinds a line
			out = append(out, st.Dim.Render("latency p50/p90/p99 over "+l.ScopeText()))
			ks := l.Kinds()
			for i := 0; i < len(ks); i += 2 {
				out = append(out, "  "+fit(ks[i].Name+" "+ks[i].P.Text(), 36)+ks[i+1].Name+" "+ks[i+1].P.Text())
			}
		}
	}
	var facts []string
	if t := sv.Spec.Text(); t != "" {
		facts = append(facts, t)
	}
	if sv.CacheHitRate != nil {
		facts = append(facts, fmt.Sprintf("prefix cache hit %.0f%%", 100**sv.CacheHitRate))
	}
	if sv.KVCacheDType != "" {
		facts = append(facts, "KV "+sv.KVCacheDType)
	}
	if len(facts) > 0 {
		out = append(out, strings.Join(facts, "  "))
	}
	if len(sv.Rows) > 0 {
		widths := []int{20, 10, 9, 4, 5, 4, 4, 8} // 80 columns with the slow mark
		if w >= 120 {
			widths = []int{34, 10, 10, 5, 6, 5, 5, 8}
		}
		row := func(cells []string) string {
			var b strings.Builder
			for i, c := range cells {
				b.WriteString(fit(c, widths[i]) + " ")
			}
			return strings.TrimRight(b.String(), " ")
		}
		rows := []string{st.Dim.Render(row(snapshot.RowHeader))}
		for _, r := range sv.Rows {
			line := row(r.Cells())
			if r.Reason != "" && r.State != snapshot.RowUp && w >= 120 {
				line += "  " + parse1(r.Reason)
			}
			switch {
			case r.Slow:
				line = st.Warn.Render(line + "  ◀ slow")
			case r.State == snapshot.RowDown:
				line = st.Bad.Render(line)
			case r.State != snapshot.RowUp:
				line = st.Dim.Render(line)
			}
			rows = append(rows, line)
		}
		if im := sv.Imbalance; im != nil {
			rows = append(rows, st.Warn.Render("⚠ imbalance: "+parse1(im.Reason)))
		}
		out = append(out, rows...)
	}
	if budget < len(out) {
		keep := max(budget-1, 0)
		more := len(out) - keep
		out = append(out[:keep], st.Dim.Render(fmt.Sprintf("… %d more lines: a taller screen shows them", more)))
	}
	for i, l := range out {
		out[i] = fit(l, w)
	}
	return append(out, fit(st.Dim.Render(m.keys.Servers.Help().Key+": close"), w))
}

// figureBudget is the lines the opened panel may take: the screen less
// everything else drawn (above: the server panel so far; the figures come
// last) and the log's least.
func (m Model) figureBudget(w int, wide bool, above string) int {
	if !m.serverWide {
		return 0
	}
	h := max(m.height, 8)
	used := lines(m.header(w)) + lines(m.table(w, wide)) + lines(above) + lines(m.footer(w))
	return h - used - logLeast - 1 // the close hint
}

// logLeast is the lines the log pane keeps when the server panel is open:
// the blank line above it, its tabs and one line of log.
const logLeast = 3
