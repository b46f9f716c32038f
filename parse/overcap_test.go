package parse

import (
	"reflect"
	"testing"
)

func TestOverCaps(t *testing.T) {
	t.Parallel()
	n := func(v int64) *int64 { return &v }
	cases := []struct {
		name       string
		records    int64
		maxSamples int64
		tokens     *int64
		budget     int64
		want       []OverCap
		text       string
	}{
		{"the seeds' B2: 26.6M tokens against 10M", 7000, 0, n(26_600_000), 10_000_000,
			[]OverCap{{CapTokenBudget, 10_000_000, 26_600_000, 16_600_000}}, "over its token budget by 16.6M tokens (26.6M of 10M)"},
		{"at the budget: the worker's stop, not over", 100, 0, n(10_000_000), 10_000_000, nil, ""},
		{"tokens not known yet: no judgement", 7000, 0, nil, 10_000_000, nil, ""},
		{"no budget", 7000, 0, n(26_600_000), 0, nil, ""},
		{"short figures alike", 0, 0, n(1_040_000_000), 1_000_000_000,
			[]OverCap{{CapTokenBudget, 1_000_000_000, 1_040_000_000, 40_000_000}}, "over its token budget by 40,000,000 tokens (1,040,000,000 of 1,000,000,000)"},
		{"past max_samples", 7200, 7000, nil, 0,
			[]OverCap{{CapMaxSamples, 7000, 7200, 200}}, "over max_samples by 200 records (7,200 of 7,000)"},
		{"one record past", 51, 50, nil, 0, []OverCap{{CapMaxSamples, 50, 51, 1}}, "over max_samples by 1 record (51 of 50)"},
		{"both", 7200, 7000, n(10_000_001), 10_000_000,
			[]OverCap{{CapTokenBudget, 10_000_000, 10_000_001, 1}, {CapMaxSamples, 7000, 7200, 200}},
			"over its token budget by 1 token (10,000,001 of 10,000,000); over max_samples by 200 records (7,200 of 7,000)"},
	}
	for _, c := range cases {
		got := OverCaps(c.records, c.maxSamples, c.tokens, c.budget)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if txt := OverCapsText(got); txt != c.text {
			t.Errorf("%s: %q, want %q", c.name, txt, c.text)
		}
	}
}

func TestShortCount(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 930: "930", 9999: "9999", 12_500: "12.5k", 6_300_000: "6.3M", 10_000_000: "10M", 1_200_000_000: "1.2G"} {
		if got := ShortCount(n); got != want {
			t.Errorf("ShortCount(%d) = %q, want %q", n, got, want)
		}
	}
}
