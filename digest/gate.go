package digest

import (
	"github.com/synthwatch/synthwatch/parse"
)

// gateRecord counts one record for the training-readiness gate, judged
// by pipeline.toml's [gate] as the agent judges it (parse.GateTally), and
// follows the pass rate in the file's order: the time of the record at
// which it last fell below the floor is the report's gate_below.
func (d *digester) gateRecord(acc *catAcc, st parse.RecordStamp) {
	n, ok := parse.Length(st.CompletionTokens, st.HasTokens, st.PromptTokens, st.HasPrompt)
	acc.gate.Add(st.Gate, n, ok, d.gate.MaxLength)
	below := acc.gate.Below(d.gate)
	if below && !acc.gateBelow {
		acc.c.GateBelowAt = nil
		if st.HasFinished {
			t := st.Finished.In(d.o.Loc)
			acc.c.GateBelowAt = &t
		}
	}
	acc.gateBelow = below
}
