package tui

import (
	"fmt"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline"
)

// The training-readiness gate in the dashboard: a PASS column beside
// DONE/TARGET where the width has room for it, and at any width a line
// under the table for each category whose pass rate is below the floor.
//
// | width     | PASS column                         | below the floor      |
// | --------- | ----------------------------------- | -------------------- |
// | < 88      | none (79 columns are the others')   | a line under the table |
// | 88 – 119  | "88.7%", "!" when below the floor   | a line under the table |
// | ≥ 120     | the same; the sparkline gives room  | a line under the table |
const (
	minPassWidth = 88
	passColumn   = 6 // "100%!", "88.7%!" within six
)

func anyGate(cs []pipeline.Category) bool {
	for _, c := range cs {
		if c.Gate != nil {
			return true
		}
	}
	return false
}

// maxGateLines bounds the lines for categories below the floor.
const maxGateLines = 3

// gateLines flags, under the table, the categories whose pass rate fell
// below [gate] min_pass_rate, in the timeline's words: the rows shown
// first, then a count of the rest.
func gateLines(all, shown []pipeline.Category) []string {
	var out []string
	listed := map[string]bool{}
	for _, c := range shown {
		if c.Gate != nil && c.Gate.Below && len(out) < maxGateLines {
			out = append(out, "▼ "+pipeline.GateBelowText(sanitizeName(c.Name), *c.Gate))
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
