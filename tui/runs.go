package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// shortTok writes a token count as people say it: 930, 12.5k, 6.3M, 10M.
func shortTok(n int64) string { return parse.ShortCount(n) }

// tokenCell is a row's tokens: "6.3M/10M tok" against a budget, else the
// tokens alone; "summing… 40 %" while the host sums them (dim: the view);
// "?" when no source has them yet. Records whose tokens are
// unknown make it "≥6.3M/10M" (the cell has no room for how many: the
// header and the run history say it).
func tokenCell(c snapshot.Category) string {
	t := ""
	switch {
	case c.CompletionTokens == nil && c.TokensSumming != nil:
		return c.TokensSumming.Text()
	case c.CompletionTokens == nil && c.TokenBudget > 0:
		return "?/" + shortTok(c.TokenBudget) + " tok"
	case c.CompletionTokens == nil:
		return ""
	case c.TokenBudget > 0:
		t = shortTok(*c.CompletionTokens) + "/" + shortTok(c.TokenBudget)
	default:
		t = shortTok(*c.CompletionTokens)
	}
	if c.TokensUnknown > 0 {
		return parse.TokenLowerBound(t, c.TokensUnknown) // no room for " tok"
	}
	return t + " tok"
}

func anyTokens(cs []snapshot.Category) bool {
	for _, c := range cs {
		if c.CompletionTokens != nil || c.TokenBudget > 0 || c.TokensSumming != nil {
			return true
		}
	}
	return false
}

// tokCell is tokenCell as the table draws it: dim while summing (not a
// figure yet), unless the whole row is stale.
func (m Model) tokCell(c snapshot.Category, w int, stale bool) string {
	t := tokenCell(c)
	if c.CompletionTokens == nil && c.TokensSumming != nil && !stale {
		return m.st.Dim.Render(fit(t, w))
	}
	return t
}

// tokensPart is tokensHeader as the header draws it: dim while summing.
func (m Model) tokensPart(s snapshot.Snapshot) string {
	if s.TokensSumming != nil {
		return m.st.Dim.Render(tokensHeader(s))
	}
	return tokensHeader(s)
}

// tokensHeader is the pipeline's completion tokens; "≥" when a category
// has no figure yet, and the records whose tokens are unknown; "tokens
// summing… 40 %" while the host sums a category's (dim: the view).
func tokensHeader(s snapshot.Snapshot) string {
	if s.TokensSumming != nil {
		return "tokens " + s.TokensSumming.Text()
	}
	if s.CompletionTokens == 0 && !anyTokens(s.Categories) {
		return ""
	}
	t := shortTok(s.CompletionTokens) + " tok"
	if s.TokensPartial {
		t = "≥" + t
	}
	return parse.TokenFigure(t, s.TokensUnknown)
}

// baselineLine is the throughput against the night's median: dim while
// normal, red with its cause once a drop has lasted.
func (m Model) baselineLine(w int) string {
	b := m.snap.Baseline
	if m.stale() || b.Server == nil && len(b.Classes) == 0 {
		return ""
	}
	st := m.st
	var parts []string
	bad := false
	trend := func(name, unit string, t snapshot.Trend) {
		p := fmt.Sprintf("%s %.0f%s, median %.0f (%.0f%%, %s)", name, t.Now, unit, t.Median, 100*t.Now/t.Median, dur(time.Duration(t.Minutes)*time.Minute))
		if t.DropSince != nil && t.Cause != "" {
			// the cause first: it is what a narrow screen must not cut
			p = fmt.Sprintf("⚠ %s DROP to %.0f%% of median since %s: %s (%.0f%s vs %.0f)", name, 100*t.Now/t.Median,
				t.DropSince.Local().Format("15:04"), t.Cause, t.Now, unit, t.Median)
			bad = true
		}
		parts = append(parts, p)
	}
	if b.Server != nil {
		trend("gen", " tok/s", *b.Server)
	}
	for _, c := range b.Classes {
		trend(c.Class, "/min", c)
	}
	line := "baseline: " + strings.Join(parts, "  ")
	if bad {
		return st.Bad.Render(ansi.Wrap(line, w, " ")) // a drop's cause is read whole
	}
	return fit(st.Dim.Render(line), w)
}

// runsBox is the selected category's run history: who started each run
// (pid, version), when, the server's arguments and the records it wrote.
func (m Model) runsBox(w int) string {
	if m.sel >= len(m.snap.Categories) {
		return m.box(w, "Run history", "no category selected", "any key: close")
	}
	c := m.snap.Categories[m.sel]
	inner := max(w-8, 20)
	var rows []string
	if line := snapshot.ConfigLine(c.Configs); line != "" {
		rows = append(rows, "records by server configuration: "+line, "")
	}
	if c.Outcomes != nil { // status's words: how its records ended
		rows = append(rows, "ended: "+c.Outcomes.Text(), "")
	}
	if c.Gate != nil { // status's words: the training-readiness gate
		rows = append(rows, "training gate: "+c.Gate.Text(), "")
	}
	for _, o := range c.OverCap {
		rows = append(rows, o.Text(), "")
	}
	if sp := c.Spend; sp != nil { // status's words: the runs' tallies (parse.Spend)
		rows = append(rows, "tokens: "+sp.LedgerText, "energy: "+sp.EnergyText, "")
	}
	for _, cc := range c.Configs { // an era's settings, from its start line
		if cc.Inferred {
			rows = append(rows, cc.Config+" "+parse.InferredFromLog+": "+cc.Args, "")
		}
	}
	if len(c.Runs) == 0 && !inferred(c.Configs) {
		rows = append(rows, "no runs.jsonl: every record here is \""+snapshot.UnknownConfig+"\" (written before runs were recorded)")
	}
	for _, r := range c.Runs {
		recs := "? records (still adding up)"
		if r.Records != nil {
			recs = fmt.Sprintf("%d records, %s", *r.Records, parse.TokenFigure(shortTok(*r.Tokens)+" tok", r.TokensUnknown))
		}
		rows = append(rows, fmt.Sprintf("%s  %s  pid %d %s  %s  %s", sanitizeName(r.Run), r.StartedAt, r.PID, sanitizeName(r.Version), r.Config, recs))
		if r.Args != "" {
			rows = append(rows, "    "+r.Args)
		}
		if r.Tally != nil { // what this run generated, wasted and drew here
			rows = append(rows, "    "+r.Tally.Brief())
		}
	}
	for i, r := range rows {
		rows[i] = ansi.Wrap(r, inner, " ")
	}
	return m.box(w, "Run history of "+sanitizeName(c.Name), strings.Join(rows, "\n"), "any key: close")
}

// dropNotices: a throughput drop that has just become sustained (the
// pipeline names its cause then, and records a throughput_drop event).
func dropNotices(old, cur snapshot.Snapshot, add func(kind, cat, text string)) {
	was := func(b snapshot.Baseline, class string) bool {
		if class == "" {
			return b.Server != nil && b.Server.Cause != ""
		}
		for _, c := range b.Classes {
			if c.Class == class && c.Cause != "" {
				return true
			}
		}
		return false
	}
	if t := cur.Baseline.Server; t != nil && t.Cause != "" && !was(old.Baseline, "") {
		add("throughput_drop", "", fmt.Sprintf("throughput %.0f tok/s, median %.0f: %s", t.Now, t.Median, t.Cause))
	}
	for _, c := range cur.Baseline.Classes {
		if c.Cause != "" && !was(old.Baseline, c.Class) {
			add("throughput_drop", c.Class, fmt.Sprintf("%s records %.0f/min, median %.0f: %s", c.Class, c.Now, c.Median, c.Cause))
		}
	}
}

// maxOverCapLines bounds the table's lines for categories past a cap: a
// root of thousands over their caps gets a count, not a screen of them.
const maxOverCapLines = 3

// overCapLines flags, under the table at any width (80 columns too), the
// categories past their token budget or max_samples, with the excess in
// status's words (parse.OverCap): the rows shown first, then a count of
// the rest, wherever they are in the table.
func overCapLines(all, shown []snapshot.Category) []string {
	var out []string
	listed := map[string]bool{}
	for _, c := range shown {
		if len(c.OverCap) > 0 && len(out) < maxOverCapLines {
			out = append(out, "▲ "+sanitizeName(c.Name)+" "+parse.OverCapsText(c.OverCap))
			listed[c.Name] = true
		}
	}
	more := 0
	for _, c := range all {
		if len(c.OverCap) > 0 && !listed[c.Name] {
			more++
		}
	}
	if more > 0 {
		noun := "categories"
		if more == 1 {
			noun = "category"
		}
		out = append(out, fmt.Sprintf("▲ %s more %s over a cap", thousands(int64(more)), noun))
	}
	return out
}

// inferred says some of cs were placed by their time in a server log's era.
func inferred(cs []snapshot.ConfigCount) bool {
	for _, c := range cs {
		if c.Inferred {
			return true
		}
	}
	return false
}
