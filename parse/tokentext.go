package parse

import "fmt"

// TokenFigure is how every view writes a token sum beside the records
// whose tokens are unknown (completion_tokens null, missing or not a
// count: a stream that ended before its usage chunk, the old script's
// None): "1.2M tok (+37 records unknown)". Those records are not in the
// sum and are never shown as 0 tokens. fig is the sum as the view writes
// it; with no unknown record it comes back as it is.
func TokenFigure(fig string, unknown int64) string {
	if unknown <= 0 {
		return fig
	}
	return fmt.Sprintf("%s (+%s)", fig, UnknownRecords(unknown))
}

// TokenLowerBound is TokenFigure for a cell with no room for the count:
// "≥1.2M", the least the records hold (the view says how many elsewhere).
func TokenLowerBound(fig string, unknown int64) string {
	if unknown <= 0 {
		return fig
	}
	return "≥" + fig
}

// UnknownRecords is "37 records unknown" (or "1 record unknown").
func UnknownRecords(n int64) string {
	if n == 1 {
		return "1 record unknown"
	}
	return fmt.Sprintf("%d records unknown", n)
}
