package parse

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// The gate's facts of a record as each writer words it: the Go worker's
// sealed line (chat and /generate, its encoder leaving < and > as they
// are), Python's json.dumps, Go's default encoder (\u003c), an OpenAI
// answer kept whole, a reasoner cut in its thinking.
func TestRecordGateFacts(t *testing.T) {
	t.Parallel()
	sealedRec := func(rest string) string {
		return strings.TrimSuffix(string(SealRecord([]byte(`{"id":"a","category":"B1","run":"r1","prompt_tokens":4,"completion_tokens":9,"finish_reason":"stop","latency_s":1.5,"finished_at":"2026-12-06T08:00:00Z"`+rest+`}`))), "\n")
	}
	escaped, _ := json.Marshal("<think>plan</think>answer") // \u003cthink\u003e
	kk := strings.Repeat("keep kicking back ", 40)          // more k's than > and \: thinkMarks looks by the markers' ends
	cases := []struct {
		name, line string
		want       GateFacts
	}{
		{"sealed chat, reasoning and answer", sealedRec(`,"content":"hello","reasoning_content":"I plan"`), GateFacts{Reasoned: true}},
		{"sealed chat, no reasoning", sealedRec(`,"content":"hello"`), GateFacts{Reasoned: false}},
		{"sealed chat, blank reasoning", sealedRec(`,"content":"hello","reasoning_content":" \n"`), GateFacts{}},
		{"sealed chat, think left in the answer", sealedRec(`,"content":"<think>x</think>hello","reasoning_content":"r"`), GateFacts{Reasoned: true, Stray: true}},
		{"sealed chat, cut in its thinking", sealedRec(`,"reasoning_content":"a long think"`), GateFacts{Reasoned: true, Empty: true}},
		{"sealed /generate, balanced", sealedRec(`,"text":"<think>\nplan\n</think>\n\nanswer"`), GateFacts{Reasoned: true}},
		{"sealed /generate, the template opened it", sealedRec(`,"text":"plan\n</think>\n\nanswer"`), GateFacts{Reasoned: true}},
		{"sealed /generate, unclosed", sealedRec(`,"text":"<think>plan plan"`), GateFacts{Reasoned: true, Empty: true, Stray: true}},
		{"sealed /generate, empty think", sealedRec(`,"text":"<think>\n\n</think>\n\nanswer"`), GateFacts{}},
		{"sealed /generate, answer after think empty", sealedRec(`,"text":"<think>plan</think>\n"`), GateFacts{Reasoned: true, Empty: true}},
		{"sealed /generate, a second think", sealedRec(`,"text":"<think>p</think>a<think>q</think>b"`), GateFacts{Reasoned: true, Stray: true}},
		{"sealed /generate, no think at all", sealedRec(`,"text":"just an answer"`), GateFacts{}},
		{"Python's dumps, chat", `{"id": "p-1", "timestamp": 1733472000.5, "completion_tokens": 12, "finish_reason": "stop", "content": "ok", "reasoning_content": "because"}`, GateFacts{Reasoned: true}},
		{"Python's dumps, null content", `{"id": "p-2", "completion_tokens": 8192, "finish_reason": "length", "content": null, "reasoning_content": "..."}`, GateFacts{Reasoned: true, Empty: true}},
		{"Python's dumps, null reasoning", `{"id": "p-3", "completion_tokens": 5, "content": "ok", "reasoning_content": null}`, GateFacts{}},
		{"Go's default encoder", `{"id":"g","text":` + string(escaped) + `}`, GateFacts{Reasoned: true}},
		{"an escaped slash", `{"id":"s","text":"<think>p<\/think>a"}`, GateFacts{Reasoned: true}},
		{"\"think\" in prose is no marker", `{"id":"w","content":"I think so > you","reasoning_content":"r"}`, GateFacts{Reasoned: true}},
		{"an OpenAI answer kept whole", `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning_content":"r"},"finish_reason":"stop"}]}`, GateFacts{Reasoned: true}},
		{"k-rich text: the markers found by their ends", `{"id":"k","text":"<think>` + kk + `</think>` + kk + `"}`, GateFacts{Reasoned: true}},
		{"k-rich, Go's escapes, a third marker", `{"id":"k","text":"\u003cthink\u003e` + kk + `\u003c/think\u003e` + kk + `\u003cthink\u003e"}`, GateFacts{Reasoned: true, Stray: true}},
		{"no answer field", `{"id":"q","messages":[],"completion_tokens":3}`, GateFacts{Empty: true}},
		{"an answer of vLLM >= 0.17 kept whole: reasoning, no reasoning_content", `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning_content":null,"reasoning":"r"},"finish_reason":"stop"}]}`, GateFacts{Reasoned: true}},
		{"Python's dumps of pandas' NaN reasoning", `{"id": "n", "content": "ok", "reasoning_content": NaN}`, GateFacts{}},
		{"Python's dumps of pandas' NaN content", `{"id": "n", "content": NaN, "reasoning_content": "r"}`, GateFacts{Empty: true, Reasoned: true}},
		{"/generate, an answer that mentions the tags", `{"id":"m","text":"Use <think>x</think> tags"}`, GateFacts{Stray: true}},
		{"/generate, an answer that mentions an opening tag", `{"id":"m","text":"Wrap it in <think> first"}`, GateFacts{Stray: true}},
	}
	for _, c := range cases {
		f, err := ParseRecordFacts([]byte(c.line))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := c.want
		if f.Gate != want {
			t.Errorf("%s: %+v, want %+v", c.name, f.Gate, want)
		}
		// the member scan judges a sealed record as its fast path does
		var o outcomeRaw
		if _, err := plainHeadWith([]byte(c.line), &o); err != nil || o.gate(o.judge()) != f.Gate {
			t.Errorf("%s: the member scan's %+v, the facts' %+v (%v)", c.name, o.gate(o.judge()), f.Gate, err)
		}
		// the report's reader judges the same
		if st, err := ParseRecordStamp([]byte(c.line), time.UTC); err == nil && st.Gate != f.Gate {
			t.Errorf("%s: the stamp's %+v, the facts' %+v", c.name, st.Gate, f.Gate)
		}
	}
}

// A tally judged under each rule: the passes under thinking true and
// false come from the same counts.
func TestJudgeGate(t *testing.T) {
	t.Parallel()
	var tally GateTally
	add := func(n int, g GateFacts, length int64) {
		for range n {
			tally.Add(g, length, true, 1000)
		}
	}
	add(80, GateFacts{Reasoned: true}, 500)
	add(10, GateFacts{}, 500) // no reasoning
	add(5, GateFacts{Reasoned: true, Stray: true}, 500)
	add(3, GateFacts{Reasoned: true, Empty: true}, 500)
	add(2, GateFacts{Reasoned: true}, 1500) // over
	auto := JudgeGate(tally, GateRules{MaxLength: 1000})
	if !auto.Thinking || !auto.Auto || auto.Pass != 80 || auto.Examined != 100 || !auto.Below {
		t.Fatalf("auto: %+v", auto)
	}
	if got, want := auto.Text(), "pass 80 of 100 (80%): 3 empty, 10 no reasoning, 5 stray think markers, 2 over max_length 1,000; thinking (auto); below 90%"; got != want {
		t.Errorf("text %q", got)
	}
	plain := JudgeGate(tally, GateRules{Thinking: "false", MaxLength: 1000})
	if plain.Thinking || plain.Pass != 95 { // 100 - 3 empty - 2 over
		t.Fatalf("plain: %+v", plain)
	}
	floor := 0.75
	high := JudgeGate(tally, GateRules{Thinking: "true", MaxLength: 1000, MinPassRate: &floor})
	if high.Below || high.Pass != 80 {
		t.Fatalf("floor 75%%: %+v", high)
	}
	few := int64(101)
	if v := JudgeGate(tally, GateRules{MaxLength: 1000, MinRecords: &few}); v.Below {
		t.Fatalf("100 records of the 101 it waits for are judged: %+v", v)
	}
	if got := JudgeGate(tally, GateRules{MaxLength: 2000}); !got.Stale {
		t.Errorf("a tally judged against 1,000 read under 2,000 is stale: %+v", got)
	}
	if JudgeGate(GateTally{Records: 5, Unexamined: 5}, GateRules{}) != nil {
		t.Error("nothing examined: no verdict")
	}
}

func TestManifestGate(t *testing.T) {
	t.Parallel()
	m, err := ParseManifest([]byte("[gate]\nthinking = true\nmax_length = 32768\nmin_pass_rate = 0.95\n"))
	if err != nil || m.Gate.Thinking != "true" || m.Gate.MaxLength != 32768 || m.Gate.PassRateFloor() != 0.95 || m.Gate.RecordsFloor() != DefaultMinRecords {
		t.Fatalf("%+v %v", m.Gate, err)
	}
	for _, bad := range []string{"thinking = \"maybe\"", "max_length = -1", "min_pass_rate = 90", "max_len = 3", "min_pass_rate = nan"} {
		if _, err := ParseManifest([]byte("[gate]\n" + bad + "\n")); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// Both ways of finding the markers find the same, however the text and
// the markers are written.
func TestThinkMarksWaysAgree(t *testing.T) {
	t.Parallel()
	parts := []string{"<think>", "</think>", `\u003cthink\u003e`, `\u003c/think\u003E`, `<\/think>`, "think", "k>", `\n`, "kk", "I think so", "<", ">", `\u003c`, "a"}
	for seed := range 2000 {
		var b strings.Builder
		for i, x := 0, seed; i < 12; i++ {
			b.WriteString(parts[x%len(parts)])
			x = x*7 + i + 3
		}
		s := []byte(b.String())
		if k, e := marksByK(s), marksByEnd(s); !slices.Equal(k, e) {
			t.Fatalf("%q: by k %v, by their ends %v", s, k, e)
		}
	}
}

// The max_length a tally was judged against: a range nobody judged (the
// fallback's awk) takes none, ranges judged against two are mixed.
func TestGateTallyMaxLength(t *testing.T) {
	t.Parallel()
	var a GateTally
	a.Merge(GateTally{Records: 5, Unexamined: 5})
	a.Add(GateFacts{Reasoned: true}, 100, true, 6000)
	a.Merge(GateTally{Records: 3, Unexamined: 3})
	if a.MaxLength != 6000 || a.Records != 9 || a.Unexamined != 8 {
		t.Fatalf("with the awk's ranges: %+v", a)
	}
	a.Merge(GateTally{Records: 1, PassPlain: 1, PassThinking: 1, MaxLength: 3000})
	if a.MaxLength != -1 {
		t.Errorf("judged against 6,000 and 3,000: %+v", a)
	}
}

// FuzzRecordGate: a record in the Go worker's shape around any answer,
// reasoning and /generate text, sealed, is judged by the fast path as the
// member scan judges it, escaped by Go's default encoder or not.
func FuzzRecordGate(f *testing.F) {
	f.Add("<think>a</think>b", "r", "", false)
	f.Add("", "", "plan</think>answer", true)
	f.Add("x k> \\u003cthink", " ", "<think>kk</think><think>", true)
	f.Fuzz(func(t *testing.T, content, reasoning, text string, escapeHTML bool) {
		type record struct { // the Go worker's, in its order (worker/record.go)
			ID               string  `json:"id"`
			Category         string  `json:"category"`
			Run              string  `json:"run"`
			PromptTokens     int     `json:"prompt_tokens"`
			CompletionTokens int     `json:"completion_tokens"`
			FinishReason     string  `json:"finish_reason"`
			FinishedAt       string  `json:"finished_at"`
			Content          *string `json:"content,omitempty"`
			ReasoningContent *string `json:"reasoning_content,omitempty"`
			Text             *string `json:"text,omitempty"`
		}
		rec := record{ID: "a", Category: "B1", Run: "r", PromptTokens: 3, CompletionTokens: 9, FinishReason: "stop", FinishedAt: "2026-12-06T08:00:00Z"}
		if content != "" || text == "" {
			rec.Content = &content
		}
		if reasoning != "" {
			rec.ReasoningContent = &reasoning
		}
		if text != "" {
			rec.Text = &text
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		if enc.Encode(rec) != nil {
			return
		}
		line := SealRecord([]byte(b.String()))
		line = line[:len(line)-1]
		if _, sealed := fastHead(line); !sealed {
			t.Fatalf("%s: not read as sealed", line)
		}
		fast, err := ParseRecordFacts(line)
		if err != nil {
			t.Fatal(err)
		}
		var o outcomeRaw
		if _, err := plainHeadWith(line, &o); err != nil || o.gate(o.judge()) != fast.Gate {
			t.Fatalf("%s: the member scan's %+v, the fast path's %+v", line, o.gate(o.judge()), fast.Gate)
		}
	})
}

// A hostile answer of a million think markers keeps three marks, not a
// mark each (hundreds of MB for one long line), by either way of finding
// them, and is judged as before: stray markers, its reasoning first.
func TestThinkMarksBounded(t *testing.T) {
	t.Parallel()
	for _, many := range []string{strings.Repeat("<think>", 1_000_000), strings.Repeat(`\u003c/think\u003e`, 1_000_000), strings.Repeat("kk</think>", 1_000_000)} {
		s := []byte("<think>r</think>a" + many)
		for name, m := range map[string][]thinkMark{"thinkMarks": thinkMarks(s), "by k": marksByK(s), "by their ends": marksByEnd(s)} {
			if len(m) != maxMarks || m[0].close || !m[1].close {
				t.Errorf("%.20q…: %s kept %d marks, the first %v", many, name, len(m), m[:min(len(m), 2)])
			}
		}
		if g := generateGate([]byte(`"` + string(s) + `"`)); !g.Reasoned || g.Empty || !g.Stray {
			t.Errorf("%.20q…: %+v", many, g)
		}
	}
}

// thinking auto: a model that does not think, one of whose 200 answers
// mentions <think> (a code answer that strips the tags), is not judged a
// thinking one (it failed all 200, "no reasoning"); one whose reasoning
// was left in its answers (no reasoning parser) still is.
func TestGateAutoOneMention(t *testing.T) {
	t.Parallel()
	var mention, inline GateTally
	for i := range 200 {
		mention.Add(GateFacts{Stray: i == 7}, 0, false, 0)
		inline.Add(GateFacts{Stray: i%10 != 0}, 0, false, 0)
	}
	if v := JudgeGate(mention, GateRules{}); v.Thinking || v.Pass != 200 {
		t.Errorf("one mention: %s", v.Text())
	}
	if v := JudgeGate(inline, GateRules{}); !v.Thinking || v.Pass != 0 {
		t.Errorf("reasoning left in the answers: %s", v.Text())
	}
}
