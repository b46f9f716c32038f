// Package report renders a digest.Summary for a person: a one-screen
// terminal summary (Text) and a self-contained HTML page with inline SVG
// charts (HTML). Every string in a Summary came from the host and is
// treated as untrusted: sanitised for the terminal, escaped in HTML.
package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/parse"
)

// maxRows keeps the terminal form on one screen: the latest intervals and
// incidents, with a line saying how many are left out.
const maxRows = 24

// clean makes host text safe for a terminal and caps it.
func clean(s string, n int) string { return parse.SanitizeLine([]byte(s), n) }

// Text writes the terminal summary. Where says where the digest came from
// (host and root); wire is the bytes the link carried for it, -1 if none.
func Text(w io.Writer, s *digest.Summary, where string, wire int64) error {
	var b strings.Builder
	day := func(t time.Time) string { return stamp(t, s.Now) }
	fmt.Fprintf(&b, "Night report · %s · %s → %s (%s), every %s\n", clean(where, 120), day(s.Since), day(s.Now), clean(s.Zone, 20), every(s.Every()))
	if w := s.Worker; w != nil {
		line := "worker: " + clean(w.State, 20)
		if w.Category != "" {
			line += " on " + clean(w.Category, 60)
		}
		fmt.Fprintf(&b, "%s (pid %d, state of %s)%s\n", line, w.PID, day(w.UpdatedAt), gone(s, w.PID))
	} else {
		b.WriteString("worker: no worker.json\n")
	}
	b.WriteString("\n")
	writeCategories(&b, s)
	writeRuns(&b, s, day)
	writeIncidents(&b, s, day)
	writeIntervals(&b, s)
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "note: %s\n", clean(n, 200))
	}
	fmt.Fprintf(&b, "read %s in %s on the host in %.1fs", parse.FormatBytes(s.Read.Bytes), parse.Plural(int64(s.Read.Files), "file"), s.Read.Seconds)
	if s.Read.Kept > 0 {
		fmt.Fprintf(&b, " (and %s of records through the stamps an earlier report kept there)", parse.FormatBytes(s.Read.Kept))
	}
	if wire >= 0 {
		fmt.Fprintf(&b, "; %s crossed the link", parse.FormatBytes(wire))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCategories(b *strings.Builder, s *digest.Summary) {
	fmt.Fprintf(b, "%-22s %15s %9s %9s %8s %8s  %s\n", "category", "done/target", "tokens", "in window", "rate/h", "left", "ETA")
	var recs, toks, unk, noTime, left int64
	var eta float64
	unknown := int64(0)
	var unread []string
	for _, c := range s.Categories {
		if c.Error != "" { // figures unknown: out of the totals, its error on the row
			row := fmt.Sprintf("%-22s %15s %9s %9s %8s %8s  %s  %s", clean(c.Name, 22), "unknown", "?", "?", "?", "?", "?", "unreadable: "+clean(c.Error, 120))
			b.WriteString(row + "\n")
			unread = append(unread, clean(c.Name, 22))
			continue
		}
		state := clean(c.State, 10)
		row := fmt.Sprintf("%-22s %15s %9s %9s %8s %8s  %s %s", clean(c.Name, 22), parse.Thousands(c.Done)+"/"+parse.Thousands(c.Target),
			parse.TokenLowerBound(count(c.Tokens), c.TokensUnknown)+budget(c.TokenBudget), parse.Thousands(c.InWindow), rate(c.RatePerHour),
			parse.Thousands(c.Left()), etaText(c), state)
		b.WriteString(strings.TrimRight(row, " ") + "\n")
		recs, toks, unk, noTime, left = recs+c.Done, toks+c.Tokens, unk+c.TokensUnknown, noTime+c.NoTime, left+c.Left()
		switch {
		case c.Left() == 0:
		case c.ETASec != nil:
			eta += *c.ETASec
		default:
			unknown++
		}
	}
	for _, c := range s.Categories {
		if c.TargetNote != "" { // the old script's --max-samples, or a prompts file changed since
			fmt.Fprintf(b, "  %s: %s\n", clean(c.Name, 22), clean(c.TargetNote, 200))
		}
		if c.DoneNote != "" && c.Error == "" { // DONE is not its line count: status's words
			fmt.Fprintf(b, "  %s: %s\n", clean(c.Name, 22), clean(c.DoneNote, 200))
		}
		if len(c.OverCap) > 0 && c.Error == "" { // past its token budget or max_samples: status's words
			fmt.Fprintf(b, "  %s: %s\n", clean(c.Name, 22), parse.OverCapsText(c.OverCap))
		}
		if c.Outcomes != nil && c.Error == "" { // how its records ended: status's words
			fmt.Fprintf(b, "  %s: ended: %s\n", clean(c.Name, 22), c.Outcomes.Text())
		}
		if g := gateText(c, s.Now); g != "" { // the training-readiness gate: status's words
			fmt.Fprintf(b, "  %s: training gate: %s\n", clean(c.Name, 22), g)
		}
		if len(c.Configs) > 0 && c.Error == "" { // which server made them: status's words
			fmt.Fprintf(b, "  %s: records by config: %s\n", clean(c.Name, 22), clean(parse.ConfigText(c.Configs), 400))
		}
	}
	fmt.Fprintf(b, "total: %s, %s, %s left", parse.Plural(recs, "record"), parse.TokenFigure(count(toks)+" completion tokens", unk), parse.Thousands(left))
	if noTime > 0 {
		fmt.Fprintf(b, "; %s with no time of their own (the hourly table's \"not placed\" row)", parse.Plural(noTime, "record"))
	}
	if len(unread) > 0 {
		fmt.Fprintf(b, "; not counting %s (unreadable)", strings.Join(unread, ", "))
	}
	b.WriteString("\n")
	switch {
	case left == 0 && len(unread) > 0:
		fmt.Fprintf(b, "ETA: unknown (%s unreadable)\n", strings.Join(unread, ", "))
	case left == 0:
		b.WriteString("ETA: nothing left\n")
	case unknown > 0 && eta == 0:
		b.WriteString("ETA: unknown (no category left runs with a rate in the window)\n")
	case unknown > 0:
		fmt.Fprintf(b, "ETA: more than %s (%s left that runs with no rate, or that nobody works on)\n", dur(eta), parse.Plural(unknown, "category"))
	default:
		fmt.Fprintf(b, "ETA: %s at the window's rates, one category after another\n", dur(eta))
	}
	if s.Capture != nil { // pipeline.toml's [capture]: status's words
		b.WriteString(s.Capture.Text() + "\n")
	}
	for _, l := range spendLines(s, 22) { // the runs' tallies: status's words
		b.WriteString(l + "\n")
	}
}

// writeRuns says how each run of the window ended, and by whose word.
func writeRuns(b *strings.Builder, s *digest.Summary, day func(time.Time) string) {
	var rows []digest.Run
	for _, r := range s.Runs {
		if r.ID == "" || r.EndAt == nil || !r.EndAt.Before(s.Since) || r.End == digest.EndRunning {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\nruns (%d)\n", len(rows))
	for _, r := range rows {
		id := clean(r.ID, 40)
		if r.ID == "" {
			id = "(no run id)"
		}
		last := "-"
		if r.EndAt != nil {
			last = day(*r.EndAt)
		}
		how := digest.EndWords(r.End)
		if r.EndCause != "" && r.End != digest.EndByYou {
			how += " (" + clean(r.EndCause, 60) + ")"
		}
		fmt.Fprintf(b, "  %-26s pid %-7s %-11s → %-11s %s, %s; %s\n", id, pid(r.PID), started(r, day), last,
			how, parse.Plural(r.Records, "record"), clean(r.EndHow, 140))
	}
}

func pid(p int) string {
	if p == 0 {
		return "-"
	}
	return fmt.Sprint(p)
}

func started(r digest.Run, day func(time.Time) string) string {
	switch {
	case r.Started != nil:
		return day(*r.Started)
	case r.First != nil:
		return day(*r.First)
	}
	return "-"
}

func writeIncidents(b *strings.Builder, s *digest.Summary, day func(time.Time) string) {
	fmt.Fprintf(b, "\nincidents (%d)", len(s.Incidents)+s.Dropped)
	if s.Dropped > 0 {
		fmt.Fprintf(b, ", %d older ones of frequent kinds left out by the host", s.Dropped)
	}
	b.WriteString("\n")
	list := s.Incidents
	if len(list) > maxRows {
		fmt.Fprintf(b, "  … %d earlier\n", len(list)-maxRows)
		list = list[len(list)-maxRows:]
	}
	for _, in := range list {
		fmt.Fprintf(b, "  %-11s %-13s %6s  %-9s %s\n", day(in.Time), until(in, s.Now), length(in, s.Now), clean(in.Kind, 11), clean(in.Text, 160)+lost(in))
	}
	if len(s.Incidents) == 0 {
		b.WriteString("  none\n")
	}
}

// until is an incident's end: "→ 02:47", "→ still", or nothing for a moment.
func until(in digest.Incident, now time.Time) string {
	switch {
	case in.End != nil && in.End.YearDay() == in.Time.YearDay():
		return "→ " + in.End.In(now.Location()).Format("15:04")
	case in.End != nil:
		return "→ " + stamp(*in.End, now)
	case in.Still:
		return "→ still"
	}
	return ""
}

func length(in digest.Incident, now time.Time) string {
	if in.End == nil && !in.Still {
		return ""
	}
	return dur(in.Span(now).Seconds())
}

func lost(in digest.Incident) string {
	if in.Lost == nil || *in.Lost == 0 {
		return ""
	}
	return fmt.Sprintf("; ~%s lost against the baseline", parse.Plural(*in.Lost, "record"))
}

func writeIntervals(b *strings.Builder, s *digest.Summary) {
	fmt.Fprintf(b, "\n%-11s %8s %9s %9s %8s  %-20s  %s\n", "interval", "records", "tokens", "tok/s", "retract", "", "records' times from")
	list := s.Intervals
	first, last := 0, len(list)
	for first < last && empty(s, list[first]) {
		first++
	}
	for last > first && empty(s, list[last-1]) {
		last--
	}
	if first > 0 {
		fmt.Fprintf(b, "%s before %s\n", plainSpan("nothing", first, s.Every()), stamp(list[first%len(list)].Start, s.Now))
	}
	list = list[first:last]
	if len(list) > maxRows {
		fmt.Fprintf(b, "  … %d earlier intervals (see --json or --html)\n", len(list)-maxRows)
		list = list[len(list)-maxRows:]
	}
	var peak int64
	for _, iv := range s.Intervals {
		peak = max(peak, total(iv).Records)
	}
	for i := 0; i < len(list); i++ {
		iv := list[i]
		if empty(s, iv) {
			j := i
			for j+1 < len(list) && empty(s, list[j+1]) {
				j++
			}
			fmt.Fprintf(b, "%-11s %s\n", stamp(iv.Start, s.Now), plainSpan("nothing", j-i+1, s.Every())+" (no records, no server figures, no incidents)")
			i = j
			continue
		}
		t := total(iv)
		tp := "-"
		if iv.Throughput != nil {
			tp = parse.Thousands(int64(iv.Throughput.Mean + 0.5))
		}
		row := fmt.Sprintf("%-11s %8s %9s %9s %8s  %-20s  %s%s", stamp(iv.Start, s.Now), parse.Thousands(t.Records), parse.TokenLowerBound(count(t.Tokens), t.TokensUnknown),
			tp, parse.Thousands(int64(iv.Retractions)), bar(t.Records, peak), sources(iv), marks(s, iv))
		b.WriteString(strings.TrimRight(row, " ") + "\n")
	}
	if len(list) == 0 {
		b.WriteString("  no records, no server figures and no incidents in the window\n")
	}
	var noTime int64
	for _, c := range s.Categories {
		noTime += c.NoTime
	}
	if noTime > 0 {
		why := "no time field a record carries (any time, not only the window's)"
		if s.UntimedPlaced > 0 {
			why = fmt.Sprintf("no time field a record carries; %s of them counted in the hours above by the server's 200 answers", parse.Thousands(s.UntimedPlaced))
		}
		fmt.Fprintf(b, "%-11s %8s %9s %9s %8s  %-20s  %s\n", "not placed", parse.Thousands(noTime), "", "", "", "", why)
	}
}

// plainSpan is "nothing for 3h00m".
func plainSpan(what string, n int, every time.Duration) string {
	return what + " for " + dur(float64(n)*every.Seconds())
}

// empty: an interval with nothing to say.
func empty(s *digest.Summary, iv digest.Interval) bool {
	return total(iv).Records == 0 && iv.Untimed == 0 && iv.Throughput == nil && iv.Retractions == 0 && marks(s, iv) == ""
}

// sources say where an interval's record times came from: the worker's
// finished_at, or the field another tool wrote.
func sources(iv digest.Interval) string {
	if iv.Untimed > 0 {
		// the server's answers less the records placed by their own times
		s := "+" + parse.Thousands(iv.Untimed) + " with no time, by the server's 200 answers"
		if own := ownSources(iv); own != "" {
			s = own + "; " + s
		}
		return s
	}
	return ownSources(iv)
}

// ownSources are the fields that placed an interval's records.
func ownSources(iv digest.Interval) string {
	if len(iv.Sources) == 0 {
		return ""
	}
	keys := make([]string, 0, len(iv.Sources))
	for k := range iv.Sources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 1 {
		return clean(keys[0], 20)
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = clean(k, 20) + " " + parse.Thousands(iv.Sources[k])
	}
	return strings.Join(parts, ", ")
}

// marks names the incidents of an interval, so a dip has its cause beside it.
func marks(s *digest.Summary, iv digest.Interval) string {
	end := iv.Start.Add(s.Every())
	seen := map[string]bool{}
	var out []string
	for _, in := range s.Incidents {
		if !in.Time.Before(iv.Start) && in.Time.Before(end) && !seen[in.Kind] {
			seen[in.Kind] = true
			out = append(out, clean(in.Kind, 11))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " · " + strings.Join(out, ",")
}

func total(iv digest.Interval) digest.Counts {
	var t digest.Counts
	for _, c := range iv.Categories {
		t.Records += c.Records
		t.Tokens += c.Tokens
		t.TokensUnknown += c.TokensUnknown
	}
	return t
}

func bar(n, peak int64) string {
	if peak == 0 {
		return ""
	}
	return strings.Repeat("█", int((n*20+peak-1)/peak))
}

// stamp is a time as the report shows it: the clock on the report's last
// day, with the date before it.
func stamp(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	t = t.In(now.Location())
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04")
	}
	return t.Format("01-02 15:04")
}

func every(d time.Duration) string {
	if d == time.Hour {
		return "hour"
	}
	return parse.FormatDuration(d)
}

func count(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func budget(b int64) string {
	if b <= 0 {
		return ""
	}
	return "/" + count(b)
}

func rate(r float64) string {
	if r <= 0 {
		return "-"
	}
	return parse.Thousands(int64(r + 0.5))
}

func etaText(c digest.Category) string {
	switch {
	case c.Left() == 0:
		return "-"
	case c.ETASec == nil:
		return "?"
	}
	return dur(*c.ETASec)
}

// dur is a duration in seconds as the dashboard writes it.
func dur(sec float64) string {
	return parse.FormatDuration(time.Duration(sec * float64(time.Second)))
}

// gone says when worker.json's run is known to have ended otherwise than
// the file says: a worker that died leaves it at "running".
func gone(s *digest.Summary, pid int) string {
	for _, r := range s.Runs {
		if r.PID == pid && r.End == digest.EndDied {
			return "; but the process is gone: it " + digest.EndWords(r.End) + " (inferred)"
		}
	}
	return ""
}
