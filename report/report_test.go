package report_test

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/report"
)

// night digests the known night at a fixed time and zone, so that its
// rendering is the same on every machine.
func night(t *testing.T) *digest.Summary {
	t.Helper()
	loc := time.FixedZone("CET", 3600)
	now := time.Date(2026, 3, 4, 6, 20, 0, 0, loc)
	root := t.TempDir()
	digesttest.Night(t, root, now, digesttest.Options{})
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now, Loc: loc})
	if err != nil {
		t.Fatal(err)
	}
	s.Read.Seconds = 0.4 // measured: fixed for the golden file
	return s
}

func TestReportTextGolden(t *testing.T) {
	var b bytes.Buffer
	if err := report.Text(&b, night(t), "gpu1:/data/eagle3/synth_100k", 5321); err != nil {
		t.Fatal(err)
	}
	golden.RequireEqual(t, b.String())
}

// hostile is a summary whose host-side strings carry terminal escapes and
// markup, as a compromised or confused host might send.
func hostile(t *testing.T) *digest.Summary {
	s := night(t)
	s.Categories[0].Name = "B1\x1b]0;owned\x07_glaive<script>alert(1)</script>"
	s.Incidents = append(s.Incidents, digest.Incident{Time: s.Now.Add(-time.Hour), Kind: "crash",
		Text: "Scheduler hit an exception \x1b[2J\x1b[31m<img src=x onerror=alert(2)>"})
	s.Notes = append(s.Notes, "note \x9b31m</p><iframe>")
	return s
}

func TestReportTextHostileGolden(t *testing.T) {
	var b bytes.Buffer
	if err := report.Text(&b, hostile(t), "gpu1\x1b[H:/root", -1); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(b.Bytes(), "\x1b\x07") || bytes.Contains(b.Bytes(), []byte{0x9b}) {
		t.Fatalf("control bytes reached the terminal: %q", b.String())
	}
	golden.RequireEqual(t, b.String())
}

func TestReportHTMLEscapesAndStaysOffline(t *testing.T) {
	var b bytes.Buffer
	if err := report.HTML(&b, hostile(t), "gpu1:/root"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "<img", "<iframe", "\x1b", "http://", "https://", "@import", "url("} {
		if strings.Contains(page, bad) && !(bad == "http://" && onlySVGNamespace(page)) {
			t.Errorf("the page holds %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;", "&lt;img src=x", `<svg id="records"`, `<svg id="throughput"`, `class="bar"`, `<path class="throughput" d="M`, "fp8_e4m3"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// onlySVGNamespace: the one URL a page may hold is SVG's namespace name,
// which is never fetched.
func onlySVGNamespace(page string) bool {
	return strings.Count(page, "http://") == strings.Count(page, `xmlns="http://www.w3.org/2000/svg"`)
}

// Records whose tokens are unknown make every token figure say so: the
// total "(+N records unknown)", a row's and an interval's cell "≥".
func TestReportTokensUnknown(t *testing.T) {
	s := night(t)
	s.Categories[0].TokensUnknown = 37
	for i := range s.Intervals {
		if c, ok := s.Intervals[i].Categories[s.Categories[0].Name]; ok && c.Records > 0 {
			c.TokensUnknown = 3
			s.Intervals[i].Categories[s.Categories[0].Name] = c
			break
		}
	}
	var b bytes.Buffer
	if err := report.Text(&b, s, "gpu1:/root", -1); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.Contains(text, " completion tokens (+37 records unknown), ") || strings.Count(text, "≥") < 2 {
		t.Fatalf("the text does not say the tokens are partly unknown:\n%s", text)
	}
	b.Reset()
	if err := report.HTML(&b, s, "gpu1:/root"); err != nil {
		t.Fatal(err)
	}
	if page := html.UnescapeString(b.String()); strings.Count(page, "(+37 records unknown)") < 2 || !strings.Contains(page, "(+3 records unknown)") {
		t.Fatalf("the page does not say the tokens are partly unknown: %q", regexp.MustCompile(`.{0,40}records unknown.{0,10}`).FindAllString(page, -1))
	}
}

// The Python-era root's hourly table: each hour's records where their own
// time fields put them, the field named, a row for what carries no time,
// no empty rows, and numbers with separators.
func TestReportPythonEraGolden(t *testing.T) {
	now := time.Date(2026, 12, 2, 4, 20, 0, 0, time.UTC)
	root := t.TempDir()
	digesttest.PythonNight(t, root, now)
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now, Loc: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	s.Read.Seconds = 0.1 // measured: fixed for the golden file
	var b bytes.Buffer
	if err := report.Text(&b, s, "gpu2:/data/py", -1); err != nil {
		t.Fatal(err)
	}
	golden.RequireEqual(t, b.String())
}

// A thinking model's night by the old script (python3's json.dumps) under
// a [gate]: each category's gate in status's words, the time its pass
// rate fell below the floor, and the page's line.
func TestReportGateGolden(t *testing.T) {
	now := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
	root := t.TempDir()
	digesttest.GateNightAt(t, root, 400, now.Add(-2*time.Hour))
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-6 * time.Hour), Now: now, Loc: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	s.Read.Seconds = 0.1 // measured: fixed for the golden file
	var b bytes.Buffer
	if err := report.Text(&b, s, "gpu3:/data/think", -1); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\n--- html ---\n")
	if err := report.HTML(&b, s, "gpu3:/data/think"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, c := range s.Categories {
		if c.Gate == nil || !strings.Contains(out, c.Name+": training gate: "+c.Gate.Text()) {
			t.Errorf("the report lacks %s's gate %+v", c.Name, c.Gate)
		}
	}
	golden.RequireEqual(t, out)
}

// The review's first night as the report tells it: each run's end and by
// whose word, the silent outage with its length, the zero-record hang.
func TestReportRunEndsGolden(t *testing.T) {
	var b bytes.Buffer
	if err := report.Text(&b, endsNight(t), "gpu1:/data/night", -1); err != nil {
		t.Fatal(err)
	}
	golden.RequireEqual(t, b.String())
}

// The same night's page: the runs' ends in the runs table, the outage and
// the hang as bands on both charts.
func TestReportRunEndsHTMLGolden(t *testing.T) {
	var b bytes.Buffer
	if err := report.HTML(&b, endsNight(t), "gpu1:/data/night"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `<rect class="band"`); n != 2*2 {
		t.Errorf("%d bands, want the outage and the hang on both charts", n)
	}
	golden.RequireEqual(t, b.String())
}

func endsNight(t *testing.T) *digest.Summary {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	r := digesttest.EndsNight(t)
	s, err := digest.Build(digest.Options{Root: r.Dir, Since: now.Add(-3 * time.Hour), Now: now, Loc: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	s.Read.Seconds = 0.1 // measured: fixed for the golden file
	return s
}

// The old script's night over two server configurations (an FP8 era and
// an auto era of the server log), as the report tells which made what.
func TestReportErasGolden(t *testing.T) {
	now := time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)
	root := t.TempDir()
	want := digesttest.EraWant(digesttest.EraNightAt(t, root, now))
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-24 * time.Hour), Now: now, Loc: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Categories { // Python's json count
		if got := parse.ConfigText(c.Configs); got != want[c.Name] {
			t.Errorf("%s: %q, Python's json counts %q", c.Name, got, want[c.Name])
		}
	}
	s.Read.Seconds = 0.2 // measured: fixed for the golden file
	var b bytes.Buffer
	if err := report.Text(&b, s, "gpu7:/data/night", -1); err != nil {
		t.Fatal(err)
	}
	golden.RequireEqual(t, b.String())
}
