// Package report renders a digest.Summary for a person: a one-screen
// terminal summary (Text) and a self-contained HTML page with inline SVG
// charts (HTML). Every string in a Summary came from the host and is
// treated as untrusted: sanitised for the terminal, escaped in HTML.
package report

import (
	"fmt"
	"io"
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
		fmt.Fprintf(&b, "%s (pid %d, state of %s)\n", line, w.PID, day(w.UpdatedAt))
	} else {
		b.WriteString("worker: no worker.json\n")
	}
	b.WriteString("\n")
	writeCategories(&b, s)
	writeIncidents(&b, s, day)
	writeIntervals(&b, s)
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "note: %s\n", clean(n, 200))
	}
	fmt.Fprintf(&b, "read %s in %d files on the host in %.1fs", bytesText(s.Read.Bytes), s.Read.Files, s.Read.Seconds)
	if wire >= 0 {
		fmt.Fprintf(&b, "; %s crossed the link", bytesText(wire))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCategories(b *strings.Builder, s *digest.Summary) {
	fmt.Fprintf(b, "%-22s %15s %9s %8s %8s %8s  %s\n", "category", "done/target", "tokens", "window", "rate/h", "left", "ETA")
	var recs, toks, unk, noTime, left int64
	var eta float64
	unknown := 0
	for _, c := range s.Categories {
		state := clean(c.State, 10)
		if c.Target > 0 && c.Left() == 0 {
			state = "done"
		}
		row := fmt.Sprintf("%-22s %15s %9s %8d %8s %8d  %s %s", clean(c.Name, 22), fmt.Sprintf("%d/%d", c.Records, c.Target),
			parse.TokenLowerBound(count(c.Tokens), c.TokensUnknown)+budget(c.TokenBudget), c.InWindow, rate(c.RatePerHour), c.Left(), etaText(c), state)
		b.WriteString(strings.TrimRight(row, " ") + "\n")
		recs, toks, unk, noTime, left = recs+c.Records, toks+c.Tokens, unk+c.TokensUnknown, noTime+c.NoTime, left+c.Left()
		switch {
		case c.Left() == 0:
		case c.ETASec != nil:
			eta += *c.ETASec
		default:
			unknown++
		}
	}
	fmt.Fprintf(b, "total: %d records, %s, %d left", recs, parse.TokenFigure(count(toks)+" completion tokens", unk), left)
	if noTime > 0 {
		fmt.Fprintf(b, "; %d records with no finish time (counted, not placed in time)", noTime)
	}
	b.WriteString("\n")
	switch {
	case left == 0:
		b.WriteString("ETA: nothing left\n")
	case unknown > 0 && eta == 0:
		b.WriteString("ETA: unknown (no category left has a rate in the window)\n")
	case unknown > 0:
		fmt.Fprintf(b, "ETA: more than %s (%d categories left have no rate yet)\n", dur(eta), unknown)
	default:
		fmt.Fprintf(b, "ETA: %s at the window's rates, one category after another\n", dur(eta))
	}
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
		fmt.Fprintf(b, "  %-11s  %-11s %s\n", day(in.Time), clean(in.Kind, 11), clean(in.Text, 140))
	}
	if len(s.Incidents) == 0 {
		b.WriteString("  none\n")
	}
}

func writeIntervals(b *strings.Builder, s *digest.Summary) {
	fmt.Fprintf(b, "\n%-11s %8s %9s %9s %8s\n", "interval", "records", "tokens", "tok/s", "retract")
	list := s.Intervals
	if len(list) > maxRows {
		fmt.Fprintf(b, "  … %d earlier intervals (see --json or --html)\n", len(list)-maxRows)
		list = list[len(list)-maxRows:]
	}
	var peak int64
	for _, iv := range s.Intervals {
		peak = max(peak, total(iv).Records)
	}
	for _, iv := range list {
		t := total(iv)
		tp := "-"
		if iv.Throughput != nil {
			tp = fmt.Sprintf("%.0f", iv.Throughput.Mean)
		}
		fmt.Fprintf(b, "%-11s %8d %9s %9s %8d  %s%s\n", stamp(iv.Start, s.Now), t.Records, parse.TokenLowerBound(count(t.Tokens), t.TokensUnknown), tp, iv.Retractions, bar(t.Records, peak), marks(s, iv))
	}
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
	return " " + strings.Join(out, ",")
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
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
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
	return fmt.Sprintf("%.0f", r)
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

// dur is an ETA: 45m, 3h10m, 2d4h.
func dur(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Minute)
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
