package snapshot

import (
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {400 * time.Millisecond, "0s"}, {10 * time.Second, "10s"}, {40 * time.Second, "40s"},
		{59 * time.Second, "59s"}, {60 * time.Second, "1m"}, {70 * time.Second, "1m10s"},
		{130 * time.Second, "2m10s"}, {9*time.Minute + 59*time.Second, "9m59s"}, {600 * time.Second, "10m"},
		{610 * time.Second, "10m"}, {59*time.Minute + 40*time.Second, "1h00m"}, {time.Hour, "1h00m"},
		{5*time.Hour + 5*time.Minute, "5h05m"}, {47 * time.Hour, "47h00m"}, {50 * time.Hour, "2d2h"},
		{-time.Second, "-"},
	} {
		if got := FormatDuration(c.d); got != c.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := FormatETA(nil); got != "?" {
		t.Errorf("FormatETA(nil) = %q", got)
	}
	s := 70.0
	if got := FormatETA(&s); got != "1m10s" {
		t.Errorf("FormatETA(70) = %q", got)
	}
}
