package tui

import (
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// fit pads or cuts s (which may hold styles) to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
}

// fitMiddle is fit for names told apart by their ends (a host's port, the
// last label of a long name): what must go is cut from the middle.
func fitMiddle(s string, w int) string {
	n := ansi.StringWidth(s)
	if n <= w || w < 5 {
		return fit(s, w)
	}
	tail := (w - 1) / 2
	head := w - 1 - tail
	return ansi.Truncate(s, head, "") + "…" + ansi.TruncateLeft(s, n-tail, "")
}

// bar draws a progress bar of w cells.
func bar(frac float64, w int) (full, empty string) {
	if w <= 0 {
		return "", ""
	}
	frac = math.Max(0, math.Min(1, frac))
	n := int(frac*float64(w) + 0.5)
	return strings.Repeat("█", n), strings.Repeat("░", w-n)
}

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// spark draws the last w values; NaN (no sample) is a gap, not a zero.
func spark(vals []float64, w int) string {
	if w <= 0 {
		return ""
	}
	if len(vals) > w {
		vals = vals[len(vals)-w:]
	}
	hi := 0.0
	for _, v := range vals {
		if !math.IsNaN(v) && v > hi {
			hi = v
		}
	}
	var b strings.Builder
	for i := 0; i < w-len(vals); i++ {
		b.WriteRune(' ')
	}
	for _, v := range vals {
		switch {
		case math.IsNaN(v):
			b.WriteRune(' ')
		case hi <= 0:
			b.WriteRune(sparkRunes[0])
		default:
			b.WriteRune(sparkRunes[int(v/hi*float64(len(sparkRunes)-1)+0.5)])
		}
	}
	return b.String()
}

// dur renders an ETA or an age: pipeline's one formatter.
func dur(d time.Duration) string { return snapshot.FormatDuration(d) }

func etaText(s *float64) string {
	if s == nil {
		return "-"
	}
	return dur(time.Duration(*s * float64(time.Second)))
}
