package counts

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/synthwatch/synthwatch/parse"
)

// gateFields reads the gate's counts that end a T line of the Go agent
// (protocol 13, remote/gatesum.go): empty, no reasoning, stray markers,
// over max_length, unmeasured, pass if not thinking, pass if thinking, and
// the max_length they were judged against. An older agent's line has none:
// its records are counted unexamined.
func gateFields(records int64, g []string) (parse.GateTally, error) {
	var v [8]int64
	for j := range g {
		n, err := strconv.ParseInt(g[j], 10, 64)
		if err != nil || n < 0 {
			return parse.GateTally{}, fmt.Errorf("bad gate count %q", g[j])
		}
		v[j] = n
	}
	t := parse.GateTally{Records: records, Empty: v[0], NoReasoning: v[1], Stray: v[2], Over: v[3], Unmeasured: v[4], PassPlain: v[5], PassThinking: v[6], MaxLength: v[7]}
	if !t.Consistent() {
		return parse.GateTally{}, errors.New("gate counts do not add up")
	}
	return t, nil
}

// gateStale says the tally's gate holds ranges judged against different
// max_lengths (pipeline.toml changed between the laptop's read and the
// agent's): Reexamine sums it again, and the agent's answer sets the
// max_length the laptop judges its own reads by (followHostMax), so it
// settles.
func (a *tokAcc) gateStale() bool { return a.sum.gate.MaxLength < 0 }

// followHostMax takes the max_length the agent judged a range against.
func (a *tokAcc) followHostMax(g parse.GateTally) {
	if g.Records > g.Unexamined {
		a.max, a.hostMax = g.MaxLength, true
	}
}

// gateVerdict is the category's gate (parse.JudgeGate) when the tally
// covers its file, nil otherwise.
func (k *Set) gateVerdict(c *catState) *parse.GateVerdict {
	if !c.known || !c.tok.complete() {
		return nil
	}
	return parse.JudgeGate(c.tok.sum.gate, k.manifest.Gate)
}

// totals reads a T line's fields: the awk's four (records tokens bytes
// unknown), which the Go agent follows with eight of outcomes
// (outcomeFields) and, from protocol 13, eight of the gate (gateFields).
// What a reader does not send is counted unexamined.
func (r *tokResult) totals(g []string) error {
	if len(g) != 4 && len(g) != 12 && len(g) != 20 {
		return fmt.Errorf("%d fields", len(g))
	}
	var v [4]int64
	for j := range v {
		n, err := strconv.ParseInt(g[j], 10, 64)
		if err != nil {
			return err
		}
		v[j] = n
	}
	r.t.Tally, r.bytes = parse.Tally{Records: v[0], Tokens: v[1], Unknown: v[3]}, v[2]
	r.t.out = parse.Outcomes{Records: v[0], Unexamined: v[0]}
	r.t.gate = parse.GateTally{Records: v[0], Unexamined: v[0]}
	var err error
	if len(g) >= 12 {
		if r.t.out, err = outcomeFields(g[:12]); err != nil {
			return err
		}
	}
	if len(g) == 20 {
		r.t.gate, err = gateFields(v[0], g[12:])
	}
	return err
}
