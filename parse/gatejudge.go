package parse

import (
	"fmt"
	"strconv"
	"strings"
)

// GateRules is pipeline.toml's [gate]: what a record needs to pass.
//
// | key           | default | meaning                                                              |
// | ------------- | ------- | -------------------------------------------------------------------- |
// | thinking      | "auto"  | true: every category's model thinks; false: none does; auto: a       |
// |               |         | category thinks when any of its records carries reasoning, or most   |
// |               |         | of them a think marker                                               |
// | max_length    | 0       | prompt + completion tokens a record may have (the drafter's training |
// |               |         | max_length); 0: not checked                                          |
// | min_pass_rate | 0.9     | a category whose pass rate falls below it is flagged (an event)      |
// | min_records   | 100     | records examined before a category's pass rate is judged             |
type GateRules struct {
	Thinking    GateThinking `toml:"thinking" json:"thinking,omitempty"`
	MaxLength   int64        `toml:"max_length" json:"max_length,omitempty"`
	MinPassRate *float64     `toml:"min_pass_rate" json:"min_pass_rate,omitempty"`
	MinRecords  *int64       `toml:"min_records" json:"min_records,omitempty"`
}

// GateThinking is thinking's setting: "auto" (or ""), "true" or "false";
// TOML's true and false are read as the strings.
type GateThinking string

// UnmarshalTOML reads a bool or one of the three strings.
func (g *GateThinking) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case bool:
		*g = GateThinking(fmt.Sprint(x))
		return nil
	case string:
		switch x {
		case "auto", "true", "false":
			*g = GateThinking(x)
			return nil
		}
	}
	return fmt.Errorf("[gate] thinking must be auto, true or false, not %v", v)
}

// Defaults of GateRules.
const (
	DefaultMinPassRate = 0.9
	DefaultMinRecords  = 100
)

// PassRateFloor is min_pass_rate or its default.
func (r GateRules) PassRateFloor() float64 {
	if r.MinPassRate != nil {
		return *r.MinPassRate
	}
	return DefaultMinPassRate
}

// RecordsFloor is min_records or its default.
func (r GateRules) RecordsFloor() int64 {
	if r.MinRecords != nil {
		return *r.MinRecords
	}
	return DefaultMinRecords
}

func (r GateRules) check() error {
	if r.MaxLength < 0 {
		return fmt.Errorf("[gate] max_length is a count of tokens, not negative")
	}
	if f := r.PassRateFloor(); !(f >= 0 && f <= 1) { // nan too: it would flag nothing
		return fmt.Errorf("[gate] min_pass_rate is a fraction from 0 to 1, not %v", f)
	}
	if r.RecordsFloor() < 0 {
		return fmt.Errorf("[gate] min_records is a count, not negative")
	}
	return nil
}

// GateFailure is one reason records failed and how many did.
type GateFailure struct {
	Reason  string `json:"reason"`
	Records int64  `json:"records"`
}

// The reasons a record fails.
const (
	GateEmpty       = "empty"
	GateNoReasoning = "no reasoning"
	GateStray       = "stray think markers"
	GateOver        = "over max_length"
)

// GateVerdict is a category's gate, as every view shows it.
type GateVerdict struct {
	Pass       int64         `json:"pass"`
	Examined   int64         `json:"examined"`      // records judged
	Rate       float64       `json:"pass_rate"`     // Pass / Examined
	Thinking   bool          `json:"thinking"`      // judged as a thinking model's
	Auto       bool          `json:"thinking_auto"` // thinking was inferred from its records
	Failures   []GateFailure `json:"failures"`      // by reason; a record may fail several
	Below      bool          `json:"below_floor"`   // Rate < min_pass_rate, with min_records examined
	Floor      float64       `json:"min_pass_rate"`
	Unexamined int64         `json:"unexamined,omitempty"` // records counted unjudged (the fallback)
	Unmeasured int64         `json:"unmeasured,omitempty"` // records judged for length by no count (max_length set)
	MaxLength  int64         `json:"max_length,omitempty"`
	// Stale: the tally was judged against another max_length than the
	// rules' (MaxLength is the one it was judged against; -1 is mixed)
	Stale bool `json:"stale,omitempty"`
}

// JudgeGate is the one judge of a category's gate, for every view: nil
// when none of its records was examined.
func JudgeGate(t GateTally, r GateRules) *GateVerdict {
	ex := t.Records - t.Unexamined
	if ex <= 0 {
		return nil
	}
	v := &GateVerdict{Examined: ex, Unexamined: t.Unexamined, Floor: r.PassRateFloor(), MaxLength: r.MaxLength}
	if t.MaxLength >= 0 { // the one its counts were judged against
		v.MaxLength = t.MaxLength
	}
	v.Pass, v.Thinking, v.Auto = t.pass(r)
	v.Rate = float64(v.Pass) / float64(ex)
	add := func(reason string, n int64, on bool) {
		if on && n > 0 {
			v.Failures = append(v.Failures, GateFailure{reason, n})
		}
	}
	add(GateEmpty, t.Empty, true)
	add(GateNoReasoning, t.NoReasoning, v.Thinking)
	add(GateStray, t.Stray, v.Thinking)
	add(GateOver, t.Over, v.MaxLength > 0)
	if v.MaxLength > 0 {
		v.Unmeasured = t.Unmeasured
	}
	v.Stale = t.MaxLength != r.MaxLength
	v.Below = t.Below(r)
	return v
}

// pass is the records passing under r, whether the model was judged a
// thinking one, and whether that was inferred (thinking auto: any record
// with reasoning, or most with a think marker: a model whose reasoning is
// left in its answers, not one answer that mentions the tags).
func (t GateTally) pass(r GateRules) (pass int64, thinking, auto bool) {
	switch r.Thinking {
	case "true":
		thinking = true
	case "false":
	default:
		auto = true
		ex := t.Records - t.Unexamined
		thinking = ex-t.NoReasoning > 0 || 2*t.Stray > ex
	}
	if thinking {
		return t.PassThinking, thinking, auto
	}
	return t.PassPlain, thinking, auto
}

// Below says the pass rate is below min_pass_rate with min_records
// examined (JudgeGate's Below, without its words: a reader that follows
// the rate record by record asks it).
func (t GateTally) Below(r GateRules) bool {
	ex := t.Records - t.Unexamined
	if ex <= 0 || ex < r.RecordsFloor() {
		return false
	}
	p, _, _ := t.pass(r)
	return float64(p) < r.PassRateFloor()*float64(ex)
}

// Text is the gate in the words every view prints: "pass 6,210 of 7,000
// (88.7%): 790 no reasoning, 12 empty; below 90%".
func (v GateVerdict) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pass %s of %s (%s)", Thousands(v.Pass), Thousands(v.Examined), Percent(v.Rate))
	var parts []string
	for _, f := range v.Failures {
		what := f.Reason
		if f.Reason == GateOver {
			what = "over max_length " + Thousands(v.MaxLength)
		}
		parts = append(parts, Thousands(f.Records)+" "+what)
	}
	if len(parts) > 0 {
		b.WriteString(": " + strings.Join(parts, ", "))
	}
	var notes []string
	if v.Thinking && v.Auto {
		notes = append(notes, "thinking (auto)")
	}
	if v.Unmeasured > 0 {
		notes = append(notes, Thousands(v.Unmeasured)+" with no token count")
	}
	if v.Unexamined > 0 {
		notes = append(notes, Thousands(v.Unexamined)+" not examined")
	}
	if v.Stale {
		notes = append(notes, "pipeline.toml's max_length changed")
	}
	if v.Below {
		notes = append(notes, "below "+Percent(v.Floor))
	}
	if len(notes) > 0 {
		b.WriteString("; " + strings.Join(notes, "; "))
	}
	return b.String()
}

// Percent is a fraction as the gate words it: "88.7%", "100%".
func Percent(f float64) string {
	p := 100 * f
	switch { // a rate that is not whole never reads as whole, nor a little as none
	case f < 1 && p > 99.9:
		p = 99.9
	case f > 0 && p < 0.1:
		p = 0.1
	}
	s := fmt.Sprintf("%.1f%%", p)
	return strings.Replace(s, ".0%", "%", 1)
}

// PassCell is the gate in a table's narrow column, beside DONE: the
// records that pass ("6210", "1.2M" past a million), "!" after it while
// the pass rate is below the floor; "-" for none.
func (v *GateVerdict) PassCell() string {
	if v == nil {
		return "-"
	}
	s := strconv.FormatInt(v.Pass, 10)
	if v.Pass >= 1_000_000 {
		s = ShortCount(v.Pass)
	}
	if v.Below {
		s += "!"
	}
	return s
}
