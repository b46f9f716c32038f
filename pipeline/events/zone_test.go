package events

import (
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The host zone is the host's: its offset, and its name when this machine
// knows it with the same offset.
func TestParseZone(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		out  string
		off  int
		name string
	}{
		{"+0530\n", 19800, ""},
		{"-0700\n/usr/share/zoneinfo/America/Los_Angeles\n", -7 * 3600, "America/Los_Angeles"},
		{"+0000\n/usr/share/zoneinfo/America/Los_Angeles\n", 0, ""}, // TZ overrides the link: the offset wins
		{"+0200\n/etc/zoneinfo/No/Such\n", 7200, ""},
		{"Welcome to gpu-host-7\n-0700\n/usr/share/zoneinfo/America/Los_Angeles\n", -7 * 3600, "America/Los_Angeles"}, // a login banner first
	} {
		loc, err := parseZone(c.out, now)
		if err != nil {
			t.Fatalf("%q: %v", c.out, err)
		}
		if _, off := now.In(loc).Zone(); off != c.off {
			t.Errorf("%q: offset %d, want %d", c.out, off, c.off)
		}
		if c.name != "" && loc.String() != c.name {
			if _, err := time.LoadLocation(c.name); err == nil {
				t.Errorf("%q: zone %s, want %s", c.out, loc, c.name)
			}
		}
	}
	for _, bad := range []string{"", "garbage", "+05", "+9999"} {
		if _, err := parseZone(bad, now); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// A vLLM time has no year and an old SGLang one no date: the year or the
// day that puts it at or before the log's last change.
func TestServerLineTimeWithoutYearOrDate(t *testing.T) {
	t.Parallel()
	zone := time.FixedZone("", -5*3600)
	ref := time.Date(2027, 1, 1, 0, 30, 0, 0, zone) // just after New Year on the host
	var l parse.ServerLog
	var evs []parse.ServerEvent
	for _, line := range []string{
		"INFO 12-31 23:59:58 [loggers.py:118] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%",
		"[23:59:59] The server is fired up and ready to roll!",
		"[00:10:00] The server is fired up and ready to roll!",
	} {
		l.Feed(line, func(ev parse.ServerEvent) { evs = append(evs, ev) })
	}
	want := []time.Time{time.Date(2026, 12, 31, 23, 59, 58, 0, zone), time.Date(2026, 12, 31, 23, 59, 59, 0, zone), time.Date(2027, 1, 1, 0, 10, 0, 0, zone)}
	if len(evs) != len(want) {
		t.Fatalf("%d events", len(evs))
	}
	for i, ev := range evs {
		if got, ok := serverLineTime(ev, zone, ref); !ok || !got.Equal(want[i]) {
			t.Errorf("line %d: %v %v, want %v", i, got, ok, want[i])
		}
	}
}
