package tui

import (
	"fmt"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// The training-readiness gate in the dashboard: a PASS column beside
// DONE/TARGET where the width has room for it, and at any width a line
// under the table for each category whose pass rate is below the floor.
//
// | width     | PASS column                         | below the floor      |
// | --------- | ----------------------------------- | -------------------- |
// | < 88      | none (79 columns are the others')   | a line under the table |
// | 88 – 119  | "6210": records passing, "!" when below the floor | a line under the table |
// | ≥ 120     | the same; the sparkline gives room  | a line under the table |
const (
	minPassWidth = 88
	passColumn   = 7 // "999999!", "12.3M!" within seven
)

// tableWidths are the table's columns that change with the width: the
// name's, the bar's, the sparkline's, the tokens' and PASS's (0: none).
func tableWidths(w int, cats []snapshot.Category) (nameW, barW, sparkW, tokW, passW int) {
	nameW, barW = 20, 8
	if w >= 120 {
		nameW, barW, sparkW = 24, 14, 16
		if anyTokens(cats) {
			tokW = 12 // "6.3M/10M tok": the row stays within 120 columns
		}
		if anySumming(cats) {
			tokW, sparkW = 14, sparkW-2 // "summing… 40 %", within 120 still
		}
	}
	if w >= minPassWidth && anyGate(cats) {
		passW = passColumn
		if sparkW > 0 {
			sparkW -= passW + 1 // within 120 columns still
		}
	}
	return nameW, barW, sparkW, tokW, passW
}

func anySumming(cs []snapshot.Category) bool {
	for _, c := range cs {
		if c.CompletionTokens == nil && c.TokensSumming != nil {
			return true
		}
	}
	return false
}

func anyGate(cs []snapshot.Category) bool {
	for _, c := range cs {
		if c.Gate != nil {
			return true
		}
	}
	return false
}

// gateNotices: a category whose pass rate has just fallen below the
// floor (the pipeline records the same as the event gate_below).
func gateNotices(old, cur snapshot.Snapshot, add func(kind, cat, text string)) {
	below := map[string]bool{} // judged below the floor last poll
	for _, c := range old.Categories {
		below[c.Name] = c.Gate == nil || c.Gate.Below // a category not seen or not judged then: no notice for what a first look finds
	}
	for _, c := range cur.Categories {
		if g := c.Gate; g != nil && g.Below && !below[c.Name] {
			add(snapshot.EventGateBelow, c.Name, snapshot.GateBelowText(c.Name, *g))
		}
	}
}

// maxGateLines bounds the lines for categories below the floor.
const maxGateLines = 3

// gateLines flags, under the table, the categories whose pass rate fell
// below [gate] min_pass_rate, in the timeline's words: the rows shown
// first, then a count of the rest.
func gateLines(all, shown []snapshot.Category) []string {
	var out []string
	listed := map[string]bool{}
	for _, c := range shown {
		if c.Gate != nil && c.Gate.Below && len(out) < maxGateLines {
			out = append(out, "▼ "+snapshot.GateBelowText(sanitizeName(c.Name), *c.Gate))
			listed[c.Name] = true
		}
	}
	more := 0
	for _, c := range all {
		if c.Gate != nil && c.Gate.Below && !listed[c.Name] {
			more++
		}
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("▼ %s more below the pass rate floor", parse.Thousands(int64(more))))
	}
	return out
}
