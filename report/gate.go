package report

import (
	"time"

	"github.com/synthwatch/synthwatch/digest"
)

// gateText is a category's training-readiness gate in status's words
// (parse.GateVerdict.Text), and when its pass rate fell below the floor
// (the dashboard's gate_below), "" when it has none.
func gateText(c digest.Category, now time.Time) string {
	if c.Gate == nil || c.Error != "" {
		return ""
	}
	s := c.Gate.Text()
	if c.Gate.Below && c.GateBelowAt != nil {
		s += " since " + stamp(*c.GateBelowAt, now)
	}
	return s
}
