package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/parse"
)

//go:embed page.html
var pageHTML string

// page is parsed once; html/template escapes every value by its context
// (text, attribute), so host text cannot become markup.
var page = template.Must(template.New("page").Parse(pageHTML))

type runRow struct {
	ID, Started, PID, Ended, How, Config, Settings, Records, ByCategory, Span string
}

type catRow struct {
	Name, Done, Tokens, Window, Rate, Left, ETA, State string
}

type incRow struct{ Time, Until, Length, Kind, Text, Colour string }

type view struct {
	Title, Where, Window, Worker, Generated string
	Categories                              []catRow
	Totals                                  string
	OverCap                                 []string // categories past a cap, in status's words
	DoneNotes                               []string // where DONE is not the line count, in status's words
	Ended                                   []string // how each category's records ended, in status's words
	Gate                                    []string // each category's training-readiness gate, in status's words
	Configs                                 []string // which server configuration made its records, in status's words
	Capture                                 string   // the next stage's disk, in status's words
	Spend                                   []string // wasted tokens and energy, in status's words
	Records, Throughput                     chart
	Incidents                               []incRow
	Runs                                    []runRow
	Notes                                   []string
}

// HTML writes one self-contained page: no scripts, no fonts or styles
// from the network, only inline SVG and CSS.
func HTML(w io.Writer, s *digest.Summary, where string) error {
	v := view{
		Title:      "synthwatch report · " + clean(where, 120),
		Where:      clean(where, 200),
		Window:     fmt.Sprintf("%s → %s (%s), every %s", stamp(s.Since, s.Now), stamp(s.Now, s.Now), clean(s.Zone, 20), every(s.Every())),
		Generated:  s.Now.Format(time.RFC3339),
		Records:    recordsChart(s),
		Throughput: throughputChart(s),
	}
	if wk := s.Worker; wk != nil {
		v.Worker = fmt.Sprintf("worker %s %s (pid %d)", clean(wk.State, 20), clean(wk.Category, 60), wk.PID)
	}
	var recs, toks, unk int64
	var unread []string
	for _, c := range s.Categories {
		if c.Error != "" { // figures unknown: out of the totals, its error on the row
			v.Categories = append(v.Categories, catRow{Name: clean(c.Name, 80), Done: "unknown", Tokens: "?", Window: "?", Rate: "?", Left: "?", ETA: "?",
				State: "unreadable: " + clean(c.Error, 200)})
			unread = append(unread, clean(c.Name, 80))
			continue
		}
		state := clean(c.State, 20)
		v.Categories = append(v.Categories, catRow{Name: clean(c.Name, 80), Done: parse.Thousands(c.Done) + "/" + parse.Thousands(c.Target),
			Tokens: parse.TokenFigure(count(c.Tokens)+budget(c.TokenBudget), c.TokensUnknown), Window: parse.Thousands(c.InWindow), Rate: rate(c.RatePerHour),
			Left: parse.Thousands(c.Left()), ETA: etaText(c), State: state})
		recs, toks, unk = recs+c.Done, toks+c.Tokens, unk+c.TokensUnknown
		if c.DoneNote != "" {
			v.DoneNotes = append(v.DoneNotes, clean(c.Name, 80)+": "+clean(c.DoneNote, 200))
		}
		if len(c.OverCap) > 0 {
			v.OverCap = append(v.OverCap, clean(c.Name, 80)+": "+parse.OverCapsText(c.OverCap))
		}
		if c.Outcomes != nil {
			v.Ended = append(v.Ended, clean(c.Name, 80)+": "+c.Outcomes.Text())
		}
		if g := gateText(c, s.Now); g != "" {
			v.Gate = append(v.Gate, clean(c.Name, 80)+": "+g)
		}
		if len(c.Configs) > 0 {
			v.Configs = append(v.Configs, clean(c.Name, 80)+": "+clean(parse.ConfigText(c.Configs), 400))
		}
	}
	v.Totals = fmt.Sprintf("%s, %s", parse.Plural(recs, "record"), parse.TokenFigure(count(toks)+" completion tokens", unk))
	if len(unread) > 0 {
		v.Totals += "; not counting " + strings.Join(unread, ", ") + " (unreadable)"
	}
	if s.Capture != nil {
		v.Capture = s.Capture.Text()
	}
	v.Spend = spendLines(s, 80)
	for _, in := range s.Incidents {
		v.Incidents = append(v.Incidents, incRow{Time: stamp(in.Time, s.Now), Until: strings.TrimPrefix(until(in, s.Now), "→ "), Length: length(in, s.Now),
			Kind: clean(in.Kind, 20), Text: clean(in.Text, 300) + lost(in), Colour: kindColour[in.Kind]})
	}
	for _, r := range s.Runs {
		v.Runs = append(v.Runs, runRowOf(s, r))
	}
	for _, n := range s.Notes {
		v.Notes = append(v.Notes, clean(n, 300))
	}
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	return nil
}

func runRowOf(s *digest.Summary, r digest.Run) runRow {
	row := runRow{ID: clean(r.ID, 60), Config: clean(r.Config, 40), Records: parse.Thousands(r.Records), ByCategory: clean(byCategory(r.ByCategory), 300),
		How: clean(digest.EndWords(r.End)+" — "+r.EndHow, 300)}
	if r.EndAt != nil && r.End != digest.EndRunning {
		row.Ended = stamp(*r.EndAt, s.Now)
	}
	if r.ID == "" {
		row.ID = "(no run: an older tool)"
	}
	if r.Started != nil {
		row.Started = stamp(*r.Started, s.Now)
	}
	if r.PID != 0 {
		row.PID = fmt.Sprint(r.PID)
	}
	if r.First != nil && r.Last != nil {
		row.Span = stamp(*r.First, s.Now) + " – " + stamp(*r.Last, s.Now)
	}
	if cfg, ok := s.Configs[r.Config]; ok {
		keys := make([]string, 0, len(cfg))
		for k := range cfg {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + cfg[k]
		}
		row.Settings = clean(strings.Join(parts, " "), 600)
	}
	return row
}

func byCategory(m map[string]int64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = parse.Thousands(m[n]) + " " + n
	}
	return strings.Join(parts, " · ")
}
