package tui

import (
	"fmt"

	"github.com/synthwatch/synthwatch/parse"
)

// spendHeader is the night's energy in the header: "3.2 kWh", and its
// cost when pipeline.toml prices it ("3.2 kWh 0.96 EUR").
func spendHeader(sp parse.Spend) string {
	t := fmt.Sprintf("%.3g kWh", *sp.KWh)
	if sp.Cost != nil {
		t += fmt.Sprintf(" %.2f %s", *sp.Cost, parse.SanitizeString(sp.Currency))
	}
	return t
}
