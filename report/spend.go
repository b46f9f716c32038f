package report

import (
	"github.com/synthwatch/synthwatch/digest"
)

// spendLines are the wasted-token ledger and the energy, the night's then
// each category's, in status's words (parse.Spend); none when no run left
// a tally. Names are cut at width.
func spendLines(s *digest.Summary, width int) []string {
	if s.Spend == nil {
		return nil
	}
	out := []string{"tokens, the night: " + s.Spend.LedgerText, "energy, the night: " + s.Spend.EnergyText}
	for _, c := range s.Categories {
		if c.Spend == nil || c.Error != "" {
			continue
		}
		out = append(out, "  "+clean(c.Name, width)+": tokens: "+c.Spend.LedgerText,
			"  "+clean(c.Name, width)+": energy: "+c.Spend.EnergyText)
	}
	return out
}
