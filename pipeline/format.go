package pipeline

import (
	"fmt"
	"strings"
	"time"
)

// FormatDuration is the one way durations (ETAs, ages, stall lengths) are
// written on screen and in status: 0s, 45s, 1m10s, 12m, 3h05m, 2d4h. It
// keeps two units at most and never drops a digit.
func FormatDuration(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 10*60:
		if s%60 == 0 {
			return fmt.Sprintf("%dm", s/60)
		}
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 48*3600-30:
		if m := (s + 30) / 60; m < 60 {
			return fmt.Sprintf("%dm", m)
		} else {
			return fmt.Sprintf("%dh%02dm", m/60, m%60)
		}
	}
	h := (s + 1800) / 3600
	return fmt.Sprintf("%dd%dh", h/24, h%24)
}

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

// FormatBytes is the one way sizes are written: 1.2 TiB, 980 GiB, 512 B.
func FormatBytes(b int64) string {
	f := float64(b)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"} {
		if f < 1024 || u == "PiB" {
			if f < 10 && u != "B" {
				return fmt.Sprintf("%.1f %s", f, u)
			}
			return fmt.Sprintf("%.0f %s", f, u)
		}
		f /= 1024
	}
	return ""
}
