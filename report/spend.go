package report

import (
	"github.com/synthwatch/synthwatch/digest"
)

// spendLines are the wasted-token ledger and the energy, the night's then
// each category's, in status's words (parse.Spend); none when no run left
// a tally. Names are cut at width. The texts came over the link from the
// host's digest: sanitised as every remote text is.
func spendLines(s *digest.Summary, width int) []string {
	if s.Spend == nil {
		return nil
	}
	out := []string{"tokens, the night: " + clean(s.Spend.LedgerText, maxSpendText), "energy, the night: " + clean(s.Spend.EnergyText, maxSpendText)}
	for _, c := range s.Categories {
		if c.Spend == nil || c.Error != "" {
			continue
		}
		out = append(out, "  "+clean(c.Name, width)+": tokens: "+clean(c.Spend.LedgerText, maxSpendText),
			"  "+clean(c.Name, width)+": energy: "+clean(c.Spend.EnergyText, maxSpendText))
	}
	return out
}

// maxSpendText bounds a ledger's or energy's line (theirs are ~300 bytes).
const maxSpendText = 600
