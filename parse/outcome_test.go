package parse

import (
	"strings"
	"testing"
	"time"
)

// The records' outcomes as each writer words them: the Go worker's sealed
// line, Python's json.dumps (spaces after the colons), SGLang's /generate
// meta_info with its finish_reason object and v0.1's string, an OpenAI
// answer kept whole, a reasoner's null content cut at max_tokens.
func TestRecordOutcome(t *testing.T) {
	t.Parallel()
	sealedRec := func(finish, content string) string {
		return strings.TrimSuffix(string(SealRecord([]byte(`{"id":"a","category":"B1","run":"r1","prompt_tokens":4,"completion_tokens":9,"finish_reason":`+finish+`,"latency_s":1.5,"finished_at":"2026-12-06T08:00:00Z"`+content+`}`))), "\n")
	}
	cases := []struct {
		name, line string
		want       Outcome
	}{
		{"the Go worker, stop", sealedRec(`"stop"`, `,"content":"hello","reasoning_content":"think"`), Outcome{FinishStop, false, true}},
		{"the Go worker, truncated with empty content", sealedRec(`"length"`, `,"content":"","reasoning_content":"a long think"`), Outcome{FinishLength, true, true}},
		{"the Go worker, /generate text", sealedRec(`"abort"`, `,"text":"  "`), Outcome{FinishAbort, true, true}},
		{"Python's dumps, length, content null", `{"id": "p-1", "completion_tokens": 8192, "finish_reason": "length", "content": null, "reasoning_content": "..."}`, Outcome{FinishLength, true, true}},
		{"SGLang /generate kept whole", `{"id": 7, "text": "x", "meta_info": {"finish_reason": {"type": "length", "length": 2048}, "completion_tokens": 2048}}`, Outcome{FinishLength, false, true}},
		{"SGLang v0.1's string", `{"id": 8, "text": "x", "meta_info": {"finish_reason": "FINISH_MATCHED_TOKEN: 2", "completion_tokens": 5}}`, Outcome{FinishStop, false, true}},
		{"an OpenAI answer kept whole", `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"..."},"finish_reason":"length"}],"usage":{"completion_tokens":10}}`, Outcome{FinishLength, true, true}},
		{"a prompt echoed, no answer field", `{"id":"q","messages":[{"role":"user","content":""}],"completion_tokens":3}`, Outcome{"", false, false}},
		{"tool calls", `{"id":"t","finish_reason":"tool_calls","content":"{}"}`, Outcome{FinishOther, false, true}},
		{"the key inside a string is no key", `{"id":"s","content":"say \"finish_reason\": \"length\""}`, Outcome{"", false, true}},
	}
	for _, c := range cases {
		f, err := ParseRecordFacts([]byte(c.line))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if f.Outcome != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, f.Outcome, c.want)
		}
	}
	var o Outcomes
	for _, x := range []Outcome{{FinishStop, false, true}, {FinishStop, false, true}, {FinishLength, true, true}, {"", false, false}} {
		o.Add(x)
	}
	o.Merge(Outcomes{Records: 6, Unexamined: 6})
	if got, want := o.Text(), "2 stop, 1 truncated (25.0%), 1 no finish_reason, 1 empty, 6 not examined"; got != want {
		t.Errorf("Text %q, want %q", got, want)
	}
}

// Found by review: a sealed record's members are looked for after its id
// (an id copied from prompts.jsonl may be an object holding any key); a
// reasoner's record with no content at all (the Go worker leaves out a
// content that never came) is an empty answer; blanks of any length are
// empty; an OpenAI answer kept beside the prompt's "text" is judged by its
// choice.
func TestRecordOutcomeReview(t *testing.T) {
	t.Parallel()
	obj := strings.TrimSuffix(string(SealRecord([]byte(`{"id":{"src":"gsm8k","run":"other","finish_reason":"length","content":"","prompt_tokens":99999,"reasoning_content":"x"},"category":"c","run":"r1","prompt_tokens":12,"completion_tokens":30,"finish_reason":"stop","latency_s":1,"finished_at":"2026-12-06T00:00:00Z","content":"the answer"}`))), "\n")
	if _, ok := fastHead([]byte(obj)); !ok {
		t.Fatal("the object-id record is not read by the fast path: the test proves nothing")
	}
	f, err := ParseRecordFacts([]byte(obj))
	want := RecordFacts{CompletionTokens: 30, HasTokens: true, Run: "r1", Outcome: Outcome{FinishStop, false, true}, PromptTokens: 12, HasPrompt: true}
	if err != nil || f != want {
		t.Errorf("an object id, sealed: %+v, want %+v", f, want)
	}
	st, err := ParseRecordStamp([]byte(obj), time.UTC)
	if err != nil || st.Outcome != want.Outcome || st.PromptTokens != 12 || st.Run != "r1" {
		t.Errorf("an object id, sealed, as the report reads it: %+v", st)
	}
	cut := strings.TrimSuffix(string(SealRecord([]byte(`{"id":"p1","category":"c","run":"r1","prompt_tokens":12,"completion_tokens":4096,"finish_reason":"length","latency_s":1,"finished_at":"2026-12-06T00:00:00Z","reasoning_content":"Let me think..."}`))), "\n")
	for _, c := range []struct {
		name, line string
		want       Outcome
	}{
		{"the Go worker's reasoner cut in its thinking", cut, Outcome{FinishLength, true, true}},
		{"Python's, the same", `{"id": "p1", "finish_reason": "length", "reasoning_content": "Let me think..."}`, Outcome{FinishLength, true, true}},
		{"newlines to max_tokens", `{"id": 1, "finish_reason": "length", "content": "` + strings.Repeat(`\n`, 40) + strings.Repeat(" ", 70) + `\u0020\t"}`, Outcome{FinishLength, true, true}},
		{"no-break spaces, escaped as json.dumps writes them", `{"id": 3, "finish_reason": "stop", "content": "\u00a0\u00a0\u3000\n"}`, Outcome{FinishStop, true, true}},
		{"no-break spaces, raw (ensure_ascii=False)", `{"id": 4, "finish_reason": "stop", "content": "` + "\u00a0 \u2003" + `\u001f"}`, Outcome{FinishStop, true, true}},
		{"a zero-width space is no blank (Python's isspace)", `{"id": 5, "finish_reason": "stop", "content": "\u200b"}`, Outcome{FinishStop, false, true}},
		{"a backslash is no blank", `{"id": 6, "finish_reason": "stop", "content": " \\n"}`, Outcome{FinishStop, false, true}},
		{"a prompt row merged with an OpenAI answer", `{"id": 2, "text": "the prompt", "choices": [{"message": {"content": null}, "finish_reason": "length"}]}`, Outcome{FinishLength, true, true}},
	} {
		f, err := ParseRecordFacts([]byte(c.line))
		if err != nil || f.Outcome != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.name, f.Outcome, err, c.want)
		}
	}
}
