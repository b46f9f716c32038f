package counts

import (
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

func TestETAByTokenBudget(t *testing.T) {
	t.Parallel()
	tok := int64(9_000_000)
	tps := 1000.0
	v := snapshot.Category{State: snapshot.StateRunning, Done: 1000, Target: 100000, RatePerMin: 60, TokenBudget: 10_000_000, CompletionTokens: &tok, TokPerSec: &tps}
	e := eta(v)
	if e == nil || *e != 1000 { // 1M tokens left at 1000 tok/s, before the 99,000 samples at 1/s
		t.Fatalf("eta %v", e)
	}
	v.TokenBudget = 0
	if e := eta(v); *e != 99000 {
		t.Fatalf("eta by samples %v", *e)
	}
	v.State = snapshot.StateDone
	if eta(v) != nil {
		t.Fatal("ETA in a final state")
	}
}
