package parse

import "math"

// RunTally is what one run of the worker generated, wasted and drew on
// one category: a line of the category's runs.jsonl ({"run":…,"tally":…}).
// The worker writes one when it leaves the category (Final) and one every
// few minutes before (a checkpoint, so a SIGKILL loses minutes, not the
// run); a reader keeps each run's last.
type RunTally struct {
	At     string      `json:"at"`
	Final  bool        `json:"final,omitempty"`
	Ledger TokenLedger `json:"ledger"`
	// Energy is null when the worker read no GPU power (no nvidia-smi):
	// never zero
	Energy *Energy `json:"energy"`
}

// MaxTallyRuns bounds the runs a Tallies keeps apart; the runs beyond it
// are summed into one (a night has tens of runs, a broken loop thousands).
const MaxTallyRuns = 512

// Tallies keeps each run's last tally on a category and sums them.
type Tallies struct {
	byRun   map[string]RunTally
	order   []string
	dropped int // tally lines left out: figures no run could make
}

// overflowRun holds the runs beyond MaxTallyRuns, each its last tally
// already summed in (a later checkpoint of such a run would be added
// twice, so those runs' later lines are dropped: their figures stay short).
const overflowRun = "\x00more"

// Bounds of a tally line's figures, far past any run's: a line beyond
// them (hand-edited, hostile) is not a run's. Summed unchecked, 1e308
// joules made +Inf, which JSON cannot hold (status --json failed whole),
// and two int64 maxima wrapped negative.
const (
	maxTallyCount   = 1 << 40 // tokens, records, samples: a trillion
	maxTallySeconds = 1e9     // 30 years
	maxTallyJoules  = 1e15    // 280 GWh
)

// Plausible says every figure of rt could be a run's: none negative, none
// past the bounds above, every float a number.
func (rt RunTally) Plausible() bool {
	l := rt.Ledger
	counts := []int64{l.Kept, l.Truncated, l.Retried, l.Aborted, l.KeptUnknown, l.Counted, int64(l.CounterResets), int64(l.Uncounted)}
	if l.Generated != nil {
		counts = append(counts, *l.Generated)
	}
	var floats [][2]float64 // value, bound
	if e := rt.Energy; e != nil {
		counts = append(counts, int64(e.Stretches), int64(e.Samples), e.Records)
		floats = [][2]float64{{e.Joules, maxTallyJoules}, {e.IdleJoules, maxTallyJoules},
			{e.Seconds, maxTallySeconds}, {e.IdleSeconds, maxTallySeconds}, {e.GPUSeconds, maxTallySeconds}}
	}
	for _, n := range counts {
		if n < 0 || n > maxTallyCount {
			return false
		}
	}
	for _, f := range floats {
		if math.IsNaN(f[0]) || f[0] < 0 || f[0] > f[1] {
			return false
		}
	}
	return true
}

// Note keeps run's tally, replacing an earlier one of the same run; a
// tally that is not Plausible is dropped.
func (t *Tallies) Note(run string, rt RunTally) {
	if !rt.Plausible() {
		t.dropped++ // said in every view (Spend.Ignored), never summed
		return
	}
	if t.byRun == nil {
		t.byRun = map[string]RunTally{}
	}
	if _, ok := t.byRun[run]; !ok {
		if len(t.order) >= MaxTallyRuns {
			if len(t.order) == MaxTallyRuns {
				t.order = append(t.order, overflowRun)
			}
			o := t.byRun[overflowRun]
			o.At = rt.At
			o.Ledger = o.Ledger.Add(rt.Ledger)
			o.Energy = addEnergy(o.Energy, rt.Energy)
			t.byRun[overflowRun] = o
			return
		}
		t.order = append(t.order, run)
	}
	t.byRun[run] = rt
}

// Of is run's last tally; false when it left none (or was summed among
// the runs beyond MaxTallyRuns).
func (t *Tallies) Of(run string) (RunTally, bool) {
	rt, ok := t.byRun[run]
	return rt, ok && run != overflowRun
}

// Brief is a run's tally in a line of the run history: "kept 49.9k of
// 51.4k generated, 1.5k retried or aborted; 0.256 kWh".
func (rt RunTally) Brief() string {
	l := rt.Ledger
	s := "kept " + ShortCount(l.Kept)
	if l.Generated != nil {
		s += " of " + ShortCount(*l.Generated) + " generated"
	}
	s += ", " + ShortCount(l.Retried+l.Aborted) + " retried or aborted"
	if e := rt.Energy; e != nil && e.Samples > 0 {
		s += "; " + KWhText(e.KWh()) + " kWh"
	} else {
		s += "; energy not measured"
	}
	if !rt.Final {
		s += " (so far)"
	}
	return s
}
func (t *Tallies) Runs() int { return len(t.byRun) }

// Sum is the runs' ledgers and energies summed; energy nil when no run
// measured any.
func (t *Tallies) Sum() (TokenLedger, *Energy) {
	var l TokenLedger
	var e *Energy
	for _, run := range t.order {
		rt := t.byRun[run]
		l = l.Add(rt.Ledger)
		e = addEnergy(e, rt.Energy)
	}
	return l, e
}

// addEnergy sums two energies either of which may be unmeasured (nil).
func addEnergy(a, b *Energy) *Energy {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		c := *b
		return &c
	case b == nil:
		c := *a
		return &c
	}
	c := a.Add(*b)
	return &c
}

// SumEnergy sums energies that may be unmeasured (nil): nil when all are.
func SumEnergy(a, b *Energy) *Energy { return addEnergy(a, b) }
