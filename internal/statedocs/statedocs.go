// Package statedocs reads the state tables of the docs (docs/STATUS.md,
// docs/SERVER-STATES.md), for the tests that hold the code's states and
// its decision tables to them.
package statedocs

import (
	"regexp"
	"strings"
)

var stateRow = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|")

// States are the states of doc's table of name's states, in its order:
// the rows between "<!-- NAME states: from snapshot.TYPEs, checked by
// TestDocStateTables -->" and "<!-- /NAME states -->". ok is false when
// the doc has no such table.
func States(doc, name, typ string) (states []string, ok bool) {
	open, end := "<!-- "+name+" states: from snapshot."+typ+"s, checked by TestDocStateTables -->\n", "<!-- /"+name+" states -->"
	_, rest, ok1 := strings.Cut(doc, open)
	table, _, ok2 := strings.Cut(rest, end)
	for _, m := range stateRow.FindAllStringSubmatch(table, -1) {
		states = append(states, m[1])
	}
	return states, ok1 && ok2
}
