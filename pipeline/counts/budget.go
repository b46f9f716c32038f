package counts

import (
	"fmt"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// tokenFigures sets v's completion tokens: the records' own sum when the
// tally covers the file (every line read or summed on the host), else
// worker.json's figure (its resume scan plus what it wrote since), else
// none. Then the budget: which cap comes first, and the progress by it.
func tokenFigures(c *catState, js *parse.CategoryState, v *snapshot.Category) {
	switch {
	case c.known && c.tok.complete():
		t := c.tok.sum.Tokens
		v.CompletionTokens, v.TokensUnknown, v.TokensFrom = &t, c.tok.sum.Unknown, snapshot.TokensFromRecords
		if o := c.tok.sum.out; o.Records > o.Unexamined {
			v.Outcomes = &o // read beside the tokens, from the same records (none by the awk)
		}
	case js != nil:
		t := js.CompletionTokens
		v.CompletionTokens, v.TokensFrom = &t, parse.WorkerStateFile
	}
	if c.tok.err != "" {
		v.Warnings = append(v.Warnings, fmt.Sprintf("%s: tokens not summed on the host: %s", c.name, c.tok.err))
	}
	if js != nil && js.TokenBudget > 0 && v.TokenBudget == 0 {
		v.TokenBudget = js.TokenBudget
	}
	budgetCap(v)
}

// budgetCap sets Progress and CappedBy: the larger of the two fractions is
// the cap that comes first.
func budgetCap(v *snapshot.Category) {
	recFrac := 0.0
	if v.Target > 0 {
		recFrac = float64(v.Done) / float64(v.Target)
	}
	v.Progress, v.CappedBy = min(recFrac, 1), snapshot.CapRecords
	if v.TokenBudget > 0 && v.CompletionTokens != nil {
		tokFrac := float64(*v.CompletionTokens) / float64(v.TokenBudget)
		if tokFrac > recFrac {
			v.Progress, v.CappedBy = min(tokFrac, 1), snapshot.CapTokens
		}
	}
}

// budgetReached says the category's token budget is spent: the worker
// stops it there, so it is done whatever its record count.
func budgetReached(v snapshot.Category) bool {
	return v.TokenBudget > 0 && v.CompletionTokens != nil && *v.CompletionTokens >= v.TokenBudget
}

// tokPerSec is a running category's tokens per second: its records' rate
// times their mean tokens, the mean of those whose tokens are known (the
// unknown ones are not 0 tokens); nil with no known record or no rate.
func tokPerSec(v snapshot.Category) *float64 {
	known := v.Done - v.TokensUnknown
	if v.CompletionTokens == nil || known <= 0 || v.RatePerMin <= 0 {
		return nil
	}
	tps := float64(*v.CompletionTokens) / float64(known) * v.RatePerMin / 60
	return &tps
}

// TotalTokens is the pipeline's completion tokens: the sum over the
// categories that have a figure, the records whose tokens are unknown
// beside it; partial when a category has no figure.
func TotalTokens(cats []snapshot.Category) (total, unknown int64, partial bool) {
	for _, c := range cats {
		if c.CompletionTokens == nil {
			partial = true
			continue
		}
		total += *c.CompletionTokens
		unknown += c.TokensUnknown
	}
	return total, unknown, partial
}

// budgetUnsummed says a category with a token budget has records whose
// tokens the host has not summed yet (a first poll leaves a big file's
// to the next): whether its budget is spent, and so whether it is done,
// is then unknown, and a first screen would call partial what a one-shot
// status (which sums them at once) calls done.
func (k *Set) budgetUnsummed() bool {
	for _, n := range k.order {
		if c := k.cats[n]; c.budget > 0 && c.known && !c.tok.complete() {
			return true
		}
	}
	return false
}

// CaptureForecast is the next stage's disk for the categories' records:
// their prompt and completion tokens (a lower bound where a category's
// tokens, or some records' counts, are not known yet) at the bytes a
// token c gives, against the root's free disk when the vitals read it.
func CaptureForecast(cats []snapshot.Category, c parse.Capture, disk *snapshot.Disk) *parse.CaptureForecast {
	if c.BytesPerToken() == 0 {
		return nil
	}
	var tokens int64
	partial := false
	for _, v := range cats {
		if v.CompletionTokens == nil || v.Outcomes == nil {
			partial = partial || v.Done > 0 || v.CountError != "" // its records not in it: at least
			if v.CompletionTokens != nil {
				tokens += *v.CompletionTokens
			}
			continue
		}
		o := v.Outcomes
		tokens += *v.CompletionTokens + o.PromptTokens
		partial = partial || v.TokensUnknown > 0 || o.PromptRecords < o.Records
	}
	var free *int64
	if disk != nil {
		f := disk.FreeBytes
		free = &f
	}
	return parse.ForecastCapture(c, tokens, partial, free)
}

// NightSpend is the categories' wasted tokens and energy summed.
func NightSpend(cats []snapshot.Category, rate parse.CostRate) *parse.Spend {
	all := make([]*parse.Spend, len(cats))
	for i := range cats {
		all[i] = cats[i].Spend
	}
	return parse.NightSpend(all, rate)
}
