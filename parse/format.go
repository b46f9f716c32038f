package parse

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FormatDuration is the one way durations (ETAs, ages, stall lengths,
// outages) are written on screen, in status and in the night report: 0s,
// 45s, 1m10s, 12m, 3h05m, 2d4h. It keeps two units at most and never drops
// a digit.
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

// ParseFormattedDuration reads back what FormatDuration wrote ("45s",
// "5m03s", "7h02m", "2d3h"); false for anything else.
func ParseFormattedDuration(s string) (time.Duration, bool) {
	if days, rest, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.Atoi(days)
		h, herr := time.ParseDuration(rest)
		if err != nil || herr != nil || n < 0 || h < 0 {
			return 0, false
		}
		return time.Duration(n)*24*time.Hour + h, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d >= 0 && s != "" && s[0] >= '0' && s[0] <= '9'
}

// Thousands writes n with commas: 1,948.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Plural is a count and its noun, the noun with an s unless n is 1:
// "1 category", "2,048 records".
func Plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(noun) > 1 && noun[len(noun)-1] == 'y' && !isVowel(noun[len(noun)-2]) {
		noun = noun[:len(noun)-1] + "ie"
	}
	return Thousands(n) + " " + noun + "s"
}

func isVowel(c byte) bool { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' }

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
