package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/parse"
)

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 900.0, 240.0
	padL, padR     = 56.0, 12.0
	padT, padB     = 12.0, 28.0
)

// palette colours the categories, in order, and again past its end.
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

var kindColour = map[string]string{
	digest.KindOutage: "#d62728", digest.KindHang: "#8c564b", digest.KindWait: "#bcbd22", digest.KindRestart: "#2ca02c", digest.KindStart: "#2ca02c",
	digest.KindStall: "#ff7f0e", digest.KindHealthFail: "#9467bd", digest.KindRunStart: "#1f77b4", digest.KindRunEnd: "#7f7f7f",
	digest.KindSlept: "#17becf", digest.KindLinkDown: "#c7c7c7",
}

type rect struct {
	X, Y, W, H float64
	Fill, Tip  string
}

type tick struct {
	X, Y  float64
	Label string
}

type marker struct {
	X           float64
	Colour, Tip string
}

// band is an incident with a length (an outage, a stall) across the chart.
type band struct {
	X, W        float64
	Colour, Tip string
}

type legend struct{ Colour, Name string }

// chart is what the template draws: an x axis of intervals and either
// stacked bars or a line.
type chart struct {
	W, H, Left, Right, Top, Bottom float64
	Height                         float64 // Bottom - Top
	Bars                           []rect
	Line                           string // an SVG path
	Dots                           []rect
	XTicks, YTicks                 []tick
	Markers                        []marker
	Bands                          []band
	Legend                         []legend
	Empty                          string
}

func newChart() chart {
	return chart{W: chartW, H: chartH, Left: padL, Right: chartW - padR, Top: padT, Bottom: chartH - padB, Height: chartH - padB - padT}
}

// x is where time t stands on the window's axis.
func (c *chart) x(s *digest.Summary, t time.Time) float64 {
	span := s.Now.Sub(s.Since)
	if len(s.Intervals) > 0 {
		span = s.Intervals[len(s.Intervals)-1].Start.Add(s.Every()).Sub(s.Since)
	}
	if span <= 0 {
		return c.Left
	}
	return c.Left + (c.Right-c.Left)*float64(t.Sub(s.Since))/float64(span)
}

func (c *chart) y(v, top float64) float64 {
	if top <= 0 {
		return c.Bottom
	}
	return c.Bottom - (c.Bottom-c.Top)*v/top
}

func (c *chart) axes(s *digest.Summary, top float64, unit string) {
	step := max(1, len(s.Intervals)/12)
	for i := 0; i < len(s.Intervals); i += step {
		t := s.Intervals[i].Start
		c.XTicks = append(c.XTicks, tick{X: c.x(s, t), Y: c.Bottom + 16, Label: t.Format("15:04")})
	}
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.YTicks = append(c.YTicks, tick{X: c.Left - 6, Y: c.y(v, top), Label: count(int64(v+0.5)) + unit})
	}
}

func (c *chart) mark(s *digest.Summary) {
	for _, in := range s.Incidents {
		col, ok := kindColour[in.Kind]
		if !ok {
			col = "#333"
		}
		tip := stamp(in.Time, s.Now) + " " + until(in, s.Now) + " " + length(in, s.Now) + " " + clean(in.Kind, 20) + ": " + clean(in.Text, 300) + lost(in)
		if in.End == nil && !in.Still {
			c.Markers = append(c.Markers, marker{X: c.x(s, in.Time), Colour: col, Tip: tip})
			continue
		}
		end := s.Now
		if in.End != nil {
			end = *in.End
		}
		x0, x1 := max(c.x(s, in.Time), c.Left), min(c.x(s, end), c.Right)
		c.Bands = append(c.Bands, band{X: x0, W: max(x1-x0, 2), Colour: col, Tip: tip})
	}
}

// recordsChart stacks each interval's records by category.
func recordsChart(s *digest.Summary) chart {
	c := newChart()
	var peak int64
	for _, iv := range s.Intervals {
		peak = max(peak, total(iv).Records)
	}
	top := niceTop(float64(peak))
	colour := map[string]string{}
	for i, cat := range s.Categories {
		colour[cat.Name] = palette[i%len(palette)]
		c.Legend = append(c.Legend, legend{Colour: colour[cat.Name], Name: clean(cat.Name, 80)})
	}
	for _, iv := range s.Intervals {
		x0, x1 := c.x(s, iv.Start), c.x(s, iv.Start.Add(s.Every()))
		base := 0.0
		for _, cat := range s.Categories {
			n := iv.Categories[cat.Name]
			if n.Records == 0 {
				continue
			}
			y0, y1 := c.y(base, top), c.y(base+float64(n.Records), top)
			c.Bars = append(c.Bars, rect{X: x0 + 1, Y: y1, W: max(x1-x0-2, 1), H: y0 - y1, Fill: colour[cat.Name],
				Tip: fmt.Sprintf("%s %s: %s, %s", stamp(iv.Start, s.Now), clean(cat.Name, 80), parse.Plural(n.Records, "record"), parse.TokenFigure(count(n.Tokens)+" tokens", n.TokensUnknown))})
			base += float64(n.Records)
		}
	}
	if peak == 0 {
		c.Empty = "no records finished in the window"
	}
	c.axes(s, top, "")
	c.mark(s)
	return c
}

// throughputChart draws the server's mean generation throughput per
// interval, with a gap where the log had none, and the incidents on it.
func throughputChart(s *digest.Summary) chart {
	c := newChart()
	peak := 0.0
	for _, iv := range s.Intervals {
		if iv.Throughput != nil {
			peak = max(peak, iv.Throughput.Mean)
		}
	}
	top := niceTop(peak)
	var d strings.Builder
	pen := false
	for _, iv := range s.Intervals {
		if iv.Throughput == nil {
			pen = false // missing samples are a gap, not a zero
			continue
		}
		x := (c.x(s, iv.Start) + c.x(s, iv.Start.Add(s.Every()))) / 2
		y := c.y(iv.Throughput.Mean, top)
		if pen {
			fmt.Fprintf(&d, " L%.1f %.1f", x, y)
		} else {
			fmt.Fprintf(&d, " M%.1f %.1f", x, y)
		}
		pen = true
		c.Dots = append(c.Dots, rect{X: x, Y: y, Tip: fmt.Sprintf("%s: %s tok/s (max %s, %s)", stamp(iv.Start, s.Now), parse.Thousands(int64(iv.Throughput.Mean+0.5)), parse.Thousands(int64(iv.Throughput.Max+0.5)), parse.Plural(int64(iv.Throughput.Samples), "line"))})
	}
	c.Line = strings.TrimSpace(d.String())
	if c.Line == "" {
		c.Empty = "no timestamped throughput lines in the server log for the window"
	}
	c.axes(s, top, "")
	c.mark(s)
	return c
}

// niceTop rounds a chart's top up to 1, 2 or 5 times a power of ten.
func niceTop(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
