package snapshot

import (
	"fmt"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// FormatDuration is the one way durations are written (parse.FormatDuration).
func FormatDuration(d time.Duration) string { return parse.FormatDuration(d) }

// FormatETA is FormatDuration for an ETA in seconds; "?" when there is none.
func FormatETA(secs *float64) string {
	if secs == nil {
		return "?"
	}
	if *secs > 1e8 { // three years: beyond a Duration's reach soon, and no plan anyone makes
		return ">3y"
	}
	return FormatDuration(time.Duration(*secs * float64(time.Second)))
}

// ETAText is the pipeline's ETA as every view shows it: the figure; or
// what is known of it ("≥12m + LONG unmeasured", "? (LONG unmeasured)");
// or "?".
func ETAText(s Snapshot) string {
	p := s.ETAPart
	switch {
	case s.ETASeconds != nil || p == nil:
		return FormatETA(s.ETASeconds)
	case p.Seconds > 0:
		return fmt.Sprintf("≥%s + %s unmeasured", FormatETA(&p.Seconds), strings.Join(p.Unmeasured, ", "))
	}
	return fmt.Sprintf("? (%s unmeasured)", strings.Join(p.Unmeasured, ", "))
}

// FormatBytes is the one way sizes are written (parse.FormatBytes).
func FormatBytes(b int64) string { return parse.FormatBytes(b) }
