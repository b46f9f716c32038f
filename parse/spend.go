package parse

import "fmt"

// Spend is a category's (or the night's) wasted-token ledger and energy
// as every view shows them: the figures derived once, here, from the
// runs' tallies (runs.jsonl, RunTally) and pipeline.toml's [cost]. The
// pipeline (status, --json, --follow, the dashboard) and the digest (the
// report) both make it with NewSpend, so they print the same words.
type Spend struct {
	Runs   int         `json:"runs"` // tallies summed: a run on two categories left two
	Ledger TokenLedger `json:"ledger"`
	// Unexplained is Ledger.Unexplained(): null without a server counter
	Unexplained *int64 `json:"unexplained"`
	// ForThisJob: the counter matches the worker's streams (Ledger.Alone)
	ForThisJob bool     `json:"for_this_job"`
	Energy     *Energy  `json:"energy"` // null: not measured (never zero)
	KWh        *float64 `json:"kwh"`
	// JPerRecord is Joules per record kept while measured
	JPerRecord *float64 `json:"j_per_kept_record"`
	// IdleW is the mean draw while no request was in flight
	IdleW    *float64 `json:"idle_w"`
	Cost     *float64 `json:"cost"` // null without a [cost] rate or energy
	Currency string   `json:"currency,omitempty"`
	// Ignored are tally lines left out: figures no run could make (a
	// hand-edited or damaged runs.jsonl), said on the ledger's line
	Ignored int `json:"ignored_tally_lines,omitempty"`
	// the words every view prints
	LedgerText string `json:"ledger_text"`
	EnergyText string `json:"energy_text"`
}

// NewSpend derives the figures of a tally sum; nil when no run left one
// (a root no Go worker of this version ran).
func NewSpend(runs int, l TokenLedger, e *Energy, rate CostRate) *Spend {
	if runs == 0 {
		return nil
	}
	s := &Spend{Runs: runs, Ledger: l, ForThisJob: l.Alone(), Energy: e, Currency: rate.Currency,
		LedgerText: l.Text(), EnergyText: EnergyText(e, rate)}
	if u, ok := l.Unexplained(); ok {
		s.Unexplained = &u
	}
	if e == nil || e.Samples == 0 {
		return s
	}
	kwh := e.KWh()
	s.KWh = &kwh
	if e.Records > 0 {
		j := e.Joules / float64(e.Records)
		s.JPerRecord = &j
	}
	if e.IdleSeconds > 0 {
		w := e.IdleJoules / e.IdleSeconds
		s.IdleW = &w
	}
	if c, ok := rate.Cost(*e); ok {
		s.Cost = &c
	}
	return s
}

// SpendOf is a category's Spend from its tallies.
func SpendOf(t *Tallies, rate CostRate) *Spend {
	l, e := t.Sum()
	return NewSpend(t.Runs(), l, e, rate).withIgnored(t.dropped, rate)
}

// withIgnored says on s's ledger line that n tally lines were left out
// (a Spend of that alone when no line was kept).
func (s *Spend) withIgnored(n int, rate CostRate) *Spend {
	if n == 0 {
		return s
	}
	if s == nil {
		s = &Spend{LedgerText: "no tally", EnergyText: EnergyText(nil, rate)}
	}
	s.Ignored += n
	s.LedgerText += fmt.Sprintf("; %s left out (figures no run could make)", Plural(int64(s.Ignored), "tally line"))
	return s
}

// NightSpend sums categories' Spends (nil ones skipped); nil when none.
func NightSpend(cats []*Spend, rate CostRate) *Spend {
	runs, ignored := 0, 0
	var l TokenLedger
	var e *Energy
	for _, s := range cats {
		if s == nil {
			continue
		}
		runs, ignored = runs+s.Runs, ignored+s.Ignored
		l = l.Add(s.Ledger)
		e = addEnergy(e, s.Energy)
	}
	return NewSpend(runs, l, e, rate).withIgnored(ignored, rate)
}
