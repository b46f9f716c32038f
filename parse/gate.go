package parse

import (
	"bytes"
	"encoding/json"
	"slices"
)

// The training-readiness gate: is a record fit to train the drafter on?
// A record's facts are read in the scan that reads its tokens (gateFacts);
// they do not depend on the rules but for max_length, so a kept tally
// stays right when thinking is set otherwise (GateTally keeps the passes
// under both settings), and is judged again when max_length changes
// (GateTally.MaxLength says which it was judged against).
//
// | check                | a chat record (content, reasoning_content)  | a /generate record (text only)                      |
// | -------------------- | ------------------------------------------- | --------------------------------------------------- |
// | answer not empty     | content not null nor blanks                 | the text after </think> not blanks                  |
// | reasoning present    | reasoning_content not null nor blanks       | a non-blank <think>…</think> (or …</think>: the      |
// |                      |                                             | chat template opened it) leading the text           |
// | no stray markers     | no <think> or </think> in content           | none after the first </think>; none unclosed; none  |
// |                      |                                             | after text                                          |
// | not over max_length  | prompt_tokens + completion_tokens ≤ max_length (the counts the record states) |  |
//
// Reasoning and stray markers fail a record of a thinking model only.

// GateFacts is what one record says to the gate.
type GateFacts struct {
	Empty    bool // no answer, or a blank one
	Reasoned bool // its reasoning is present and not blank
	Stray    bool // a think marker in its answer, or an unclosed <think>
}

// thinkMark is a <think> or </think> in a JSON string's raw bytes: from
// at, to end.
type thinkMark struct {
	at, end int
	close   bool
}

// thinkMarks finds the think markers in a JSON string's raw bytes (no
// quotes), however the writer escaped them: Go's encoder writes < and >
// as \u003c and \u003e unless told not to, and "/" may be "\/". A marker
// is found by a byte of its own that is rare in the text, each hit then
// looked at (bytes.Index of "think" is slower than either on text full
// of t's):
//
// | text                       | looked for                               |
// | -------------------------- | ---------------------------------------- |
// | few k's (most text)        | the word's 'k'                           |
// | more k's than > and \      | each '>' and each '\' (an escaped '>')   |
//
// Only the first maxMarks are kept: the gate looks at the first two and
// whether there are more, and a hostile answer of ten million markers
// would otherwise hold a mark each (hundreds of MB for one 70 MB line).
func thinkMarks(s []byte) []thinkMark {
	if k := bytes.Count(s, []byte{'k'}); k > len(s)>>8 && k > bytes.Count(s, []byte{'>'})+bytes.Count(s, []byte{'\\'}) {
		return marksByEnd(s)
	}
	return marksByK(s)
}

// maxMarks is how many markers thinkMarks keeps, from the first.
const maxMarks = 3

// marksByK is thinkMarks by each 'k'.
func marksByK(s []byte) []thinkMark {
	var out []thinkMark
	for i := 0; len(out) < maxMarks; {
		j := bytes.IndexByte(s[i:], 'k')
		if j < 0 {
			return out
		}
		k := i + j
		i = k + 1
		if m, ok := markAt(s, k-4); ok {
			out = append(out, m)
			i = m.end
		}
	}
	return out
}

// markAt is the marker whose word "think" starts at at, if one does.
func markAt(s []byte, at int) (thinkMark, bool) {
	if at < 0 || at+5 > len(s) || string(s[at:at+5]) != "think" {
		return thinkMark{}, false
	}
	end := gtAfter(s, at+5)
	if end < 0 {
		return thinkMark{}, false
	}
	start, closing := ltBefore(s, at)
	if start < 0 {
		return thinkMark{}, false
	}
	return thinkMark{at: start, end: end, close: closing}, true
}

// marksByEnd is thinkMarks by each '>' and each '\\' that may begin an
// escaped one, in the order they stand (each pass finds them in order, so
// the first maxMarks of both passes hold the first maxMarks of all).
func marksByEnd(s []byte) []thinkMark {
	var out []thinkMark
	for _, c := range []byte{'>', '\\'} {
		for i, n := 0, 0; n < maxMarks; {
			j := bytes.IndexByte(s[i:], c)
			if j < 0 {
				break
			}
			e := i + j
			i = e + 1
			if m, ok := markAt(s, e-5); ok && (c == '>' || m.end == e+6) {
				out = append(out, m)
				n++
			}
		}
	}
	slices.SortFunc(out, func(a, b thinkMark) int { return a.at - b.at })
	return out[:min(len(out), maxMarks)]
}

// gtAfter is the end of a ">" at s[i:] ("\u003e" too), else -1.
func gtAfter(s []byte, i int) int {
	switch {
	case i < len(s) && s[i] == '>':
		return i + 1
	case i+6 <= len(s) && s[i] == '\\' && (string(s[i:i+6]) == `\u003e` || string(s[i:i+6]) == `\u003E`):
		return i + 6
	}
	return -1
}

// ltBefore is where a "<" or "</" ending at s[:at] starts, and whether it
// has the slash; -1 for none.
func ltBefore(s []byte, at int) (int, bool) {
	closing := false
	switch {
	case at >= 2 && string(s[at-2:at]) == `\/`:
		at, closing = at-2, true
	case at >= 1 && s[at-1] == '/':
		at, closing = at-1, true
	}
	switch {
	case at >= 1 && s[at-1] == '<':
		return at - 1, closing
	case at >= 6 && (string(s[at-6:at]) == `\u003c` || string(s[at-6:at]) == `\u003C`):
		return at - 6, closing
	}
	return -1, false
}

// stringBody is a JSON string's raw bytes without its quotes; ok false
// for null, an array of parts or anything else.
func stringBody(raw []byte) ([]byte, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	return raw[1 : len(raw)-1], true
}

// present says a reasoning value is there and not blank: null (and NaN,
// Python's dumps of pandas' missing value) is not, a string is when it
// holds a byte other than blanks, anything else is. raw
// may run past the value (a sealed record's rest): only its first
// non-blank byte is looked for, not its end.
func present(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	switch {
	case len(raw) == 0 || raw[0] == 'n' || bytes.HasPrefix(raw, []byte("NaN")):
		return false
	case raw[0] != '"':
		return true
	}
	s := raw[1:]
	if q := bytes.IndexByte(s, '"'); q >= 0 {
		if q > 0 && s[q-1] == '\\' {
			return true // an escaped quote: not blank
		}
		s = s[:q]
	}
	return !blank(s)
}

// gate reads a record's GateFacts from the members the outcome scan
// gathered and its Outcome.
func (o outcomeRaw) gate(out Outcome) GateFacts {
	content, reasoning, hasContent := o.content, o.reasoning, o.hasContent
	if !hasContent && o.choices != nil { // an OpenAI answer kept whole
		if c := firstChoice(o.choices); c != nil {
			if msg, err := Members(c["message"]); err == nil {
				content, hasContent = msg["content"], msg["content"] != nil
				for _, k := range []string{"reasoning_content", "reasoning"} { // vLLM >= 0.17 names it reasoning only (vllm#33402)
					if !present(reasoning) {
						reasoning = msg[k]
					}
				}
			}
		}
	}
	if !hasContent && o.hasText { // /generate: the thinking is in the text
		g := generateGate(o.text)
		g.Reasoned = g.Reasoned || present(reasoning)
		return g
	}
	g := GateFacts{Empty: out.Empty || !out.Answer, Reasoned: present(reasoning)}
	if s, ok := stringBody(content); ok {
		g.Stray = len(thinkMarks(s)) > 0
	}
	return g
}

// generateGate judges a /generate record's text, where the reasoning
// leads the answer inside <think>…</think> (the opening tag may be the
// chat template's, in the prompt).
func generateGate(raw []byte) GateFacts {
	s, ok := stringBody(raw)
	if !ok {
		return GateFacts{Empty: emptyAnswer(raw) || len(bytes.TrimSpace(raw)) == 0}
	}
	m := thinkMarks(s)
	if len(m) == 0 {
		return GateFacts{Empty: blank(s)}
	}
	first := m[0]
	if first.close { // "reasoning</think>answer"
		return GateFacts{Reasoned: !blank(s[:first.at]), Empty: blank(s[first.end:]), Stray: len(m) > 1}
	}
	if !blank(s[:first.at]) { // text before <think>: an answer that mentions the tag, no reasoning
		return GateFacts{Stray: true}
	}
	if len(m) < 2 || !m[1].close { // unclosed, or nested: cut in its thinking or malformed
		return GateFacts{Reasoned: !blank(s[first.end:]), Empty: true, Stray: true}
	}
	return GateFacts{
		Reasoned: !blank(s[first.end:m[1].at]),
		Empty:    blank(s[m[1].end:]),
		Stray:    len(m) > 2,
	}
}

// GateTally counts a category's records for the gate, so that any setting
// of thinking can be judged from it: PassPlain passes if the model does
// not think, PassThinking if it does. Over is judged against MaxLength
// (0: not checked; -1: ranges judged against different ones were merged,
// so the tally must be read again).
type GateTally struct {
	Records      int64 `json:"records"`
	Unexamined   int64 `json:"unexamined,omitempty"` // counted by a reader that judges no record (the fallback's awk)
	Empty        int64 `json:"empty"`
	NoReasoning  int64 `json:"no_reasoning"`
	Stray        int64 `json:"think_markers"`
	Over         int64 `json:"over_max_length"`
	Unmeasured   int64 `json:"unmeasured,omitempty"` // records stating no completion_tokens: not judged for length
	PassPlain    int64 `json:"pass_plain"`
	PassThinking int64 `json:"pass_thinking"`
	MaxLength    int64 `json:"max_length,omitempty"`
}

// Length is the tokens a record states for the length check: completion
// and prompt (a missing prompt count is 0); ok false without completion
// tokens.
func Length(completion int64, hasCompletion bool, prompt int64, hasPrompt bool) (int64, bool) {
	if !hasCompletion {
		return 0, false
	}
	if hasPrompt {
		completion += prompt
	}
	return completion, true
}

// Add counts one record of length tokens (measured false: unknown),
// judged against maxLength (0: none).
func (t *GateTally) Add(g GateFacts, length int64, measured bool, maxLength int64) {
	switch {
	case t.Records == t.Unexamined:
		t.MaxLength = maxLength
	case t.MaxLength != maxLength:
		t.MaxLength = -1
	}
	t.Records++
	over := false
	switch {
	case maxLength <= 0:
	case !measured:
		t.Unmeasured++
	default:
		over = length > maxLength
	}
	count := func(c *int64, b bool) {
		if b {
			*c++
		}
	}
	count(&t.Empty, g.Empty)
	count(&t.NoReasoning, !g.Reasoned)
	count(&t.Stray, g.Stray)
	count(&t.Over, over)
	plain := !g.Empty && !over
	count(&t.PassPlain, plain)
	count(&t.PassThinking, plain && g.Reasoned && !g.Stray)
}

// Merge adds another range's tally.
func (t *GateTally) Merge(x GateTally) {
	switch { // a range none of whose records was judged (the awk's) judged against none
	case x.Records == x.Unexamined:
	case t.Records == t.Unexamined:
		t.MaxLength = x.MaxLength
	case t.MaxLength != x.MaxLength:
		t.MaxLength = -1
	}
	t.Records += x.Records
	t.Unexamined += x.Unexamined
	t.Empty += x.Empty
	t.NoReasoning += x.NoReasoning
	t.Stray += x.Stray
	t.Over += x.Over
	t.Unmeasured += x.Unmeasured
	t.PassPlain += x.PassPlain
	t.PassThinking += x.PassThinking
}

// Consistent says the tally's counts could be a tally's: none above its
// examined records, the passes within them (a host's answer is checked).
func (t GateTally) Consistent() bool {
	ex := t.Records - t.Unexamined
	for _, n := range []int64{t.Unexamined, t.Empty, t.NoReasoning, t.Stray, t.Over, t.Unmeasured, t.PassPlain, t.PassThinking} {
		if n < 0 || n > t.Records {
			return false
		}
	}
	return t.PassPlain <= ex && t.PassThinking <= t.PassPlain && t.PassPlain <= ex-t.Empty && t.PassPlain <= ex-t.Over
}

func (t GateTally) String() string {
	b, _ := json.Marshal(t)
	return string(b)
}
