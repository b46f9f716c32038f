package parse

import (
	"fmt"
	"strconv"
	"strings"
)

// Caps a category can be over.
const (
	CapTokenBudget = "token_budget" // completion tokens past pipeline.toml's (or the worker's) token_budget
	CapMaxSamples  = "max_samples"  // unique records past pipeline.toml's max_samples
)

// OverCap is a category past one of its caps: by how much, against what.
// The seeds' B2 ran to 26.6M tokens against a 10M budget that
// --max-samples only approximated, and no view said so.
type OverCap struct {
	Cap    string `json:"cap"`    // CapTokenBudget | CapMaxSamples
	Limit  int64  `json:"limit"`  // the cap
	Value  int64  `json:"value"`  // what the category holds (tokens: a lower bound when some records' are unknown)
	Excess int64  `json:"excess"` // Value - Limit, > 0
}

// OverCaps is the one judge of a category's caps, for every view: its
// unique records against max_samples (0: none), its completion tokens
// (nil: not known yet, no judgement) against its token budget (0: none).
// Tokens counted with some records' unknown are a lower bound: over
// stays over. Only a cap passed counts; reaching it is the worker's stop.
func OverCaps(records int64, maxSamples int64, tokens *int64, budget int64) []OverCap {
	var out []OverCap
	if budget > 0 && tokens != nil && *tokens > budget {
		out = append(out, OverCap{CapTokenBudget, budget, *tokens, *tokens - budget})
	}
	if maxSamples > 0 && records > maxSamples {
		out = append(out, OverCap{CapMaxSamples, maxSamples, records, records - maxSamples})
	}
	return out
}

// Text says it in the words every view prints: "over its token budget by
// 16.6M tokens (26.6M of 10M)", "over max_samples by 200 records (7,200
// of 7,000)".
func (o OverCap) Text() string {
	if o.Cap == CapTokenBudget {
		if o.Excess < 1e4 || ShortCount(o.Value) == ShortCount(o.Limit) { // short figures would read "10M of 10M"
			return fmt.Sprintf("over its token budget by %s (%s of %s)", Plural(o.Excess, "token"), Thousands(o.Value), Thousands(o.Limit))
		}
		return fmt.Sprintf("over its token budget by %s tokens (%s of %s)", ShortCount(o.Excess), ShortCount(o.Value), ShortCount(o.Limit))
	}
	return fmt.Sprintf("over max_samples by %s (%s of %s)", Plural(o.Excess, "record"), Thousands(o.Value), Thousands(o.Limit))
}

// OverCapsText is a category's caps passed, joined: "" when none is.
func OverCapsText(os []OverCap) string {
	var parts []string
	for _, o := range os {
		parts = append(parts, o.Text())
	}
	return strings.Join(parts, "; ")
}

// ShortCount writes a count in at most five characters or so: 950,
// 12.5k, 6.3M, 1.2G (tokens in a table's cell).
func ShortCount(n int64) string {
	f := func(v float64, unit string) string {
		s := strconv.FormatFloat(v, 'f', 1, 64)
		return strings.TrimSuffix(s, ".0") + unit
	}
	switch {
	case n >= 1e9:
		return f(float64(n)/1e9, "G")
	case n >= 1e6:
		return f(float64(n)/1e6, "M")
	case n >= 1e4:
		return f(float64(n)/1e3, "k")
	}
	return strconv.FormatInt(n, 10)
}
