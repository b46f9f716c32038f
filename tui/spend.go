package tui

import (
	"fmt"

	"github.com/synthwatch/synthwatch/parse"
)

// appendSpend adds the night's energy to the header's parts: "3.2 kWh",
// and its cost when pipeline.toml prices it ("3.2 kWh 0.96 EUR"); nothing
// when it was not measured.
func appendSpend(parts []string, sp *parse.Spend) []string {
	if sp == nil || sp.KWh == nil {
		return parts
	}
	t := parse.KWhText(*sp.KWh) + " kWh"
	if sp.Cost != nil {
		t += fmt.Sprintf(" %.2f %s", *sp.Cost, parse.SanitizeString(sp.Currency))
	}
	return append(parts, t)
}
