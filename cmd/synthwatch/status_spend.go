package main

import (
	"fmt"
	"io"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// printSpend prints the wasted-token ledger and the energy, the night's
// then each category's, in parse.Spend's words (the dashboard's run
// history and the report say the same). Nothing when no run left a tally.
func printSpend(out io.Writer, s snapshot.Snapshot) {
	if s.Spend == nil {
		return
	}
	fmt.Fprintf(out, "tokens, the night: %s\n", s.Spend.LedgerText)
	fmt.Fprintf(out, "energy, the night: %s\n", s.Spend.EnergyText)
	for _, c := range s.Categories {
		if c.Spend == nil {
			continue
		}
		name := parse.SanitizeString(c.Name)
		fmt.Fprintf(out, "  %s: tokens: %s\n", name, c.Spend.LedgerText)
		fmt.Fprintf(out, "  %s: energy: %s\n", name, c.Spend.EnergyText)
	}
}
