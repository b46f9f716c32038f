package counts

import (
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// The agent's T line: the awk's four fields (records unexamined), an
// older agent's twelve (outcomes, the gate unexamined), protocol 13's
// twenty; counts that cannot be a tally's are refused.
func TestTokenSumsGateFields(t *testing.T) {
	t.Parallel()
	res, err := parseTokenSums([]byte("1 T 10 500 4000 0\n2 T 10 500 4000 0 10 0 0 0 0 1 0 0\n3 T 10 500 4000 0 10 0 0 0 0 1 0 0 1 2 0 3 0 6 5 8192\n"), 3)
	if err != nil {
		t.Fatal(err)
	}
	want := parse.GateTally{Records: 10, Empty: 1, NoReasoning: 2, Over: 3, PassPlain: 6, PassThinking: 5, MaxLength: 8192}
	if g := res[2].t.gate; g != want {
		t.Errorf("protocol 13: %+v, want %+v", g, want)
	}
	for i := range 2 {
		if g := res[i].t.gate; g.Records != 10 || g.Unexamined != 10 || parse.JudgeGate(g, parse.GateRules{}) != nil {
			t.Errorf("range %d: %+v: not examined", i+1, g)
		}
	}
	if _, err := parseTokenSums([]byte("1 T 10 500 4000 0 10 0 0 0 0 1 0 0 1 2 0 3 0 9 5 8192\n"), 1); err == nil {
		t.Error("more passing than records not emptied: accepted")
	}
}

// A tally whose ranges were judged against different max_lengths is
// read again, and the laptop then judges its own reads as the agent
// does (it reads pipeline.toml now).
func TestGateMaxFollowsTheAgent(t *testing.T) {
	t.Parallel()
	var a tokAcc
	a.max = 6000
	tallyLine(&a.sum, []byte(`{"id":"a","content":"x","reasoning_content":"r","completion_tokens":10}`), a.max, a.loc)
	a.answer(&Job{from: 0, n: 10}, &tokResult{t: tally{gate: parse.GateTally{Records: 2, PassPlain: 2, PassThinking: 2, MaxLength: 3000}}, bytes: 10})
	if !a.gateStale() || a.max != 3000 {
		t.Fatalf("mixed: stale %v, max %d", a.gateStale(), a.max)
	}
	a.reset()
	tallyLine(&a.sum, []byte(`{"id":"a","content":"x","reasoning_content":"r","completion_tokens":10}`), a.max, a.loc)
	if a.gateStale() || a.sum.gate.MaxLength != 3000 {
		t.Errorf("after the re-read: %+v", a.sum.gate)
	}
}
