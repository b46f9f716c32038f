// Package tui is the dashboard: one root Bubble Tea model, panes as plain
// structs with SetSize and View, no I/O in Update (every poll and action is
// a tea.Cmd that returns a typed message), and one Styles from a palette.
package tui

import (
	"charm.land/lipgloss/v2"
)

// Styles are every style the panes use, built from one semantic palette.
type Styles struct {
	Title, Dim, Bold, OK, Warn, Bad, Accent, Selected, Stale, Key, Bar, BarEmpty, Dialog lipgloss.Style
}

// NewStyles builds the styles for a dark or light background; plain (no
// colour, NO_COLOR) keeps only bold and faint.
func NewStyles(dark, plain bool) Styles {
	ld := lipgloss.LightDark(dark)
	c := func(light, darkc string) lipgloss.Style {
		if plain {
			return lipgloss.NewStyle()
		}
		return lipgloss.NewStyle().Foreground(ld(lipgloss.Color(light), lipgloss.Color(darkc)))
	}
	s := Styles{
		Title:    c("#5A3FC0", "#B39DFF").Bold(true),
		Dim:      lipgloss.NewStyle().Faint(true),
		Bold:     lipgloss.NewStyle().Bold(true),
		OK:       c("#1F7A1F", "#7CD67C"),
		Warn:     c("#9A6700", "#E8C15A"),
		Bad:      c("#B00020", "#FF6B6B").Bold(true),
		Accent:   c("#0B5CAD", "#7FB8FF"),
		Selected: lipgloss.NewStyle().Reverse(true),
		Stale:    lipgloss.NewStyle().Faint(true),
		Key:      c("#0B5CAD", "#7FB8FF").Bold(true),
		Bar:      c("#1F7A1F", "#7CD67C"),
		BarEmpty: lipgloss.NewStyle().Faint(true),
		Dialog:   lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1),
	}
	return s
}
