package parse

import "testing"

func TestTokenFigure(t *testing.T) {
	for _, c := range []struct {
		fig     string
		unknown int64
		long    string
		short   string
	}{
		{"1.2M tok", 0, "1.2M tok", "1.2M tok"},
		{"1.2M tok", 1, "1.2M tok (+1 record unknown)", "≥1.2M tok"},
		{"1234567", 37, "1234567 (+37 records unknown)", "≥1234567"},
		{"0 tok", 5, "0 tok (+5 records unknown)", "≥0 tok"},
	} {
		if got := TokenFigure(c.fig, c.unknown); got != c.long {
			t.Errorf("TokenFigure(%q, %d) = %q, want %q", c.fig, c.unknown, got, c.long)
		}
		if got := TokenLowerBound(c.fig, c.unknown); got != c.short {
			t.Errorf("TokenLowerBound(%q, %d) = %q, want %q", c.fig, c.unknown, got, c.short)
		}
	}
}
