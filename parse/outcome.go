package parse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// How a record's generation ended, as the servers say it (finish_reason).
const (
	FinishStop   = "stop"   // an EOS or stop string: the answer is whole
	FinishLength = "length" // max_tokens reached: truncated
	FinishAbort  = "abort"  // the server gave up on it (SGLang's abort, a restart)
	FinishOther  = "other"  // tool_calls, content_filter, a reason of another server
)

// Outcome is how one record ended: Finish ("" when the record says
// nothing), Empty when its answer is there and empty (null, "" or blanks:
// a reasoner cut in its thinking answers content null with finish_reason
// length), Answer when the record has an answer field at all.
type Outcome struct {
	Finish string
	Empty  bool
	Answer bool
}

// finishOf reads a finish_reason value: a string (OpenAI's and the Go
// worker's "stop", SGLang v0.1's "FINISH_LENGTH: 128") or SGLang's object
// {"type": "length", "length": 128} (schedule_batch.py to_json). null and
// anything else unreadable is "".
func finishOf(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return ""
	}
	if raw[0] == '{' {
		m, err := Members(raw)
		if err != nil {
			return ""
		}
		raw = m["type"]
	}
	s, ok := jsonText(raw)
	if !ok {
		return ""
	}
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "finish_")
	if i := strings.IndexAny(s, ": "); i >= 0 {
		s = s[:i]
	}
	switch s {
	case "":
		return ""
	case "stop", "eos", "end_turn", "stop_sequence", "matched_token", "matched_str", "matched":
		return FinishStop
	case "length", "max_tokens":
		return FinishLength
	case "abort", "aborted", "cancelled", "canceled":
		return FinishAbort
	}
	return FinishOther
}

// emptyAnswer says whether an answer's raw value is empty: null, a string
// of blanks only. A long string is not looked into: it is not empty.
func emptyAnswer(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" || string(raw) == "NaN" { // NaN: Python's dumps of pandas' missing value
		return true
	}
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false // an array of parts or a number: not judged empty
	}
	return blank(raw[1 : len(raw)-1])
}

// blank says a JSON string's raw bytes (no quotes) are blanks and their
// escapes only, however many (a model that emits newlines to
// max_tokens): it stops at the first other byte. A blank is what
// Python's str.isspace calls one (the reference, `not s.strip()`): ASCII's
// and Unicode's spaces (U+00A0, U+3000, …), raw or escaped (\u00a0, as
// json.dumps writes it by default).
func blank(s []byte) bool {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			r, n := jsonEscape(s[i:])
			if n == 0 || !pySpace(r) {
				return false
			}
			i += n
		case c < utf8.RuneSelf:
			if !pySpace(rune(c)) {
				return false
			}
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if !pySpace(r) {
				return false
			}
			i += n
		}
	}
	return true
}

// jsonEscape reads the escape at the start of s: the rune and its length
// (0: not one).
func jsonEscape(s []byte) (rune, int) {
	if len(s) < 2 {
		return 0, 0
	}
	switch s[1] {
	case 'n':
		return '\n', 2
	case 't':
		return '\t', 2
	case 'r':
		return '\r', 2
	case 'f':
		return '\f', 2
	case 'u':
		if len(s) < 6 {
			return 0, 0
		}
		v, err := strconv.ParseUint(string(s[2:6]), 16, 32)
		if err != nil {
			return 0, 0
		}
		return rune(v), 6
	}
	return 0, 0
}

// pySpace is Python's str.isspace of one rune: Go's unicode.IsSpace and
// the ASCII separators U+001C–U+001F.
func pySpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// outcomeRaw is what a record's members say of its outcome, gathered in
// the scan that reads its head.
type outcomeRaw struct {
	finish, content, text, meta, usage, choices, run, prompt, reasoning []byte
	hasContent, hasText, hasReasoning                                   bool
	times                                                               *timeRaw // nil: its time is not asked (recordtime.go)
}

func (o *outcomeRaw) take(key string, v []byte) {
	if o.times != nil {
		o.times.take(key, v)
	}
	switch key {
	case "run":
		o.run = v
	case "prompt_tokens":
		o.prompt = v
	case "usage":
		o.usage = v
	case "finish_reason":
		o.finish = v
	case "content":
		o.content, o.hasContent = v, true
	case "text", "response", "output": // /generate's; the old scripts' names for the answer
		o.text, o.hasText = v, true
	case "meta_info":
		o.meta = v
	case "choices":
		o.choices = v
	case "reasoning_content":
		o.reasoning, o.hasReasoning = v, true
	}
}

// judge is the record's Outcome: its own finish_reason, else meta_info's
// (SGLang's /generate), else its first choice's (an OpenAI answer kept
// whole); its answer is content, else the first choice's message content
// or text (a record that merges the prompt row keeps the prompt's "text"
// beside them), else text (or response, output). A record with reasoning
// and no answer field at all is a reasoner cut in its thinking: the Go
// worker leaves out a content that never came (omitempty), Python writes
// null; both are an empty answer.
func (o outcomeRaw) judge() Outcome {
	var out Outcome
	if o.finish != nil {
		out.Finish = finishOf(o.finish)
	}
	choice := firstChoice(o.choices)
	if out.Finish == "" && o.meta != nil {
		if m, err := Members(o.meta); err == nil {
			out.Finish = finishOf(m["finish_reason"])
		}
	}
	if out.Finish == "" && choice != nil {
		out.Finish = finishOf(choice["finish_reason"])
	}
	if o.hasContent {
		out.Answer, out.Empty = true, emptyAnswer(o.content)
		return out
	}
	if choice != nil {
		if answer, empty := choiceAnswer(choice); answer {
			out.Answer, out.Empty = true, empty
			return out
		}
	}
	switch {
	case o.hasText:
		out.Answer, out.Empty = true, emptyAnswer(o.text)
	case o.hasReasoning:
		out.Answer, out.Empty = true, true
	}
	return out
}

// firstChoice is the members of an OpenAI answer's first choice (nil: none).
func firstChoice(choices []byte) map[string][]byte {
	if len(choices) == 0 || choices[0] != '[' {
		return nil
	}
	var cs []json.RawMessage
	if json.Unmarshal(choices, &cs) != nil || len(cs) == 0 {
		return nil
	}
	choice, _ := Members(cs[0])
	return choice
}

// choiceAnswer is whether a choice holds an answer (its message's content,
// else its text), and whether that is empty.
func choiceAnswer(choice map[string][]byte) (answer, empty bool) {
	if msg, err := Members(choice["message"]); err == nil {
		if c, ok := msg["content"]; ok {
			return true, emptyAnswer(c)
		}
	} else if t, ok := choice["text"]; ok {
		return true, emptyAnswer(t)
	}
	return false, false
}

var (
	runMember    = []byte(`,"run":`)
	promptMember = []byte(`,"prompt_tokens":`)
	finishKey    = []byte(`,"finish_reason":`)
	contentKey   = []byte(`,"content":`)
	textKey      = []byte(`,"text":`)
	reasoningKey = []byte(`,"reasoning_content":`)
)

// afterID is a sealed record's bytes after its id: an id copied from
// prompts.jsonl may be an object holding any key, so the members are
// looked for after it (fastHead reads completion_tokens so too).
func afterID(line []byte) []byte {
	rest := line[len(idHead):]
	return rest[max(skipValue(rest), 0):]
}

// sealedOutcome reads the outcome's members of the Go worker's sealed record, after its id
// (afterID), without a scan: its members are in the worker's order and
// none after the id holds an object, so the first ,"finish_reason": and
// ,"content": are its own (a key's bytes cannot occur inside a JSON
// string, whose quotes are escaped).
func sealedOutcome(body []byte) outcomeRaw {
	var o outcomeRaw
	if i := bytes.Index(body, finishKey); i >= 0 {
		v := body[i+len(finishKey):]
		if n := skipValue(v); n > 0 {
			o.finish = v[:n]
		}
	}
	if i := bytes.Index(body, contentKey); i >= 0 {
		v := body[i+len(contentKey):]
		if n := skipValue(v); n > 0 {
			o.content, o.hasContent = v[:n], true
		}
	} else if i := bytes.Index(body, textKey); i >= 0 { // /generate: text, no content
		v := body[i+len(textKey):]
		if n := skipValue(v); n > 0 {
			o.text, o.hasText = v[:n], true
		}
	}
	if i := bytes.Index(body, reasoningKey); i >= 0 {
		// the rest of the record from its value: the gate asks only
		// whether it begins with something other than blanks (present)
		o.hasReasoning, o.reasoning = true, body[i+len(reasoningKey):]
	}
	return o
}

// Outcomes are a category's records by how they ended. Unexamined are
// records a reader counted without looking at their outcome (the
// fallback's awk sums tokens only).
type Outcomes struct {
	Records    int64 `json:"records"`
	Stop       int64 `json:"stop"`
	Length     int64 `json:"length"` // truncated at max_tokens
	Abort      int64 `json:"abort"`
	Other      int64 `json:"other"`
	None       int64 `json:"no_finish_reason"` // records that say nothing of it
	Empty      int64 `json:"empty"`            // an answer there and empty
	Unexamined int64 `json:"unexamined,omitempty"`
	// PromptTokens are the prompt tokens of the PromptRecords whose count
	// is known, read in the same pass (the next stage's hidden states
	// cover prompt and completion: parse.CaptureBytes)
	PromptTokens  int64 `json:"prompt_tokens"`
	PromptRecords int64 `json:"prompt_records"`
}

// AddPrompt counts one record's prompt tokens, when it has a count.
func (o *Outcomes) AddPrompt(n int64, ok bool) {
	if ok {
		o.PromptTokens += n
		o.PromptRecords++
	}
}

// Add counts one record's outcome.
func (o *Outcomes) Add(x Outcome) {
	o.Records++
	switch x.Finish {
	case FinishStop:
		o.Stop++
	case FinishLength:
		o.Length++
	case FinishAbort:
		o.Abort++
	case FinishOther:
		o.Other++
	default:
		o.None++
	}
	if x.Empty {
		o.Empty++
	}
}

// Merge adds another range's outcomes.
func (o *Outcomes) Merge(x Outcomes) {
	o.Records += x.Records
	o.Stop += x.Stop
	o.Length += x.Length
	o.Abort += x.Abort
	o.Other += x.Other
	o.None += x.None
	o.Empty += x.Empty
	o.Unexamined += x.Unexamined
	o.PromptTokens += x.PromptTokens
	o.PromptRecords += x.PromptRecords
}

// Text is the outcomes in the words every view prints: "6,210 stop, 790
// truncated (11.3%), 12 empty", the parts that are not 0; "" for none.
func (o Outcomes) Text() string {
	if o.Records == 0 {
		return ""
	}
	var parts []string
	add := func(n int64, what string) {
		if n > 0 {
			parts = append(parts, Thousands(n)+" "+what)
		}
	}
	add(o.Stop, "stop")
	if o.Length > 0 {
		examined := o.Records - o.Unexamined
		parts = append(parts, fmt.Sprintf("%s truncated (%.1f%%)", Thousands(o.Length), 100*float64(o.Length)/float64(max(examined, 1))))
	}
	add(o.Abort, "aborted")
	add(o.Other, "other end")
	add(o.None, "no finish_reason")
	add(o.Empty, "empty")
	if o.Unexamined > 0 {
		parts = append(parts, Thousands(o.Unexamined)+" not examined")
	}
	return strings.Join(parts, ", ")
}

// sealedRun is the sealed record's top-level run, found as sealedOutcome
// finds its members: "" when it has none or it is not a string.
func sealedRun(body []byte) string {
	i := bytes.Index(body, runMember)
	if i < 0 {
		return ""
	}
	v := body[i+len(runMember):]
	n := skipValue(v)
	if n <= 0 {
		return ""
	}
	return rawString(v[:n])
}

// promptTokens is the record's prompt tokens (top level, else usage's,
// else meta_info's), as its completion tokens are read.
func (o outcomeRaw) promptTokens() (int64, bool) {
	return memberCount("prompt_tokens", o.prompt, o.usage, o.meta)
}

// sealedPrompt is the sealed record's top-level prompt_tokens.
func sealedPrompt(body []byte) (int64, bool) {
	i := bytes.Index(body, promptMember)
	if i < 0 {
		return 0, false
	}
	v := body[i+len(promptMember):]
	n := skipValue(v)
	if n <= 0 {
		return 0, false
	}
	return countTokens(v[:n])
}
