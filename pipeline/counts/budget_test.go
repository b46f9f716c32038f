package counts

import (
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// tok/s is the rate times the mean tokens of the records whose tokens are
// known: 40 records of 100 tokens and 60 unknown at 60 records/min are
// 100 tok/s, not the 40 that counting the unknown as 0 gives.
func TestTokPerSecFromKnownRecords(t *testing.T) {
	t.Parallel()
	tok := int64(4000)
	v := snapshot.Category{Done: 100, TokensUnknown: 60, CompletionTokens: &tok, RatePerMin: 60}
	if got := tokPerSec(v); got == nil || *got != 100 {
		t.Fatalf("tok/s %v, want 100", got)
	}
	v.TokensUnknown = 100
	if got := tokPerSec(v); got != nil {
		t.Fatalf("no record with known tokens: tok/s %v, want none", *got)
	}
}
