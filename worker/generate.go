package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/synthwatch/synthwatch/parse"
)

// generateAccumulator joins /generate chunks. SGLang streams text and
// output_ids in one of three ways (python/sglang/srt/managers/
// tokenizer_manager.py, _handle_batch_output; in 2026 tokenizer_manager_
// components/output_processor.py, OutputProcessor.handle_batch_output):
//
//   - 2026 default: both cumulative (intermediate chunks' text is filled
//     in by _wait_one_response);
//   - 2026 --incremental-streaming-output: both deltas;
//   - 2025 (BatchStrOutput era) with --stream-output: text cumulative
//     (state.text) but output_ids deltas (state.output_ids[last_output_offset:]).
//
// So each field is judged on its own. A field is cumulative while every
// chunk extends the one before; the first chunk that does not proves
// deltas. For ids, meta_info.completion_tokens (the running count) proves
// deltas as soon as a chunk holds fewer ids than that count. A field never
// proven delta is cumulative: its last chunk is the answer.
//
// Work and memory are linear in the bytes received: through a gateway that
// drops sampling_params.stream_interval (smg) a 10,000-token answer comes
// as 10,000 cumulative chunks, and keeping every chunk used to cost 14 GB
// of allocations (BenchmarkGenerateCumulativePerToken). While a field looks
// cumulative only its last chunk and the chunk lengths are kept: the
// earlier chunks are prefixes of it, so the deltas reading can be rebuilt
// if a later chunk disproves it. The bytes on the wire stay quadratic for
// the first such answer only: whole.go.
type generateAccumulator struct {
	text, ids          seqAcc
	chunks             int
	finish             string
	finishRaw          json.RawMessage
	promptTok, compTok int
	hasCompTok         bool
	hasText            bool
	bound              answerBound
}

// seqAcc is one field's chunks (raw JSON: a string's contents, or an
// array's elements). ids join with commas and extend only at element
// boundaries.
type seqAcc struct {
	list  bool
	last  []byte // while cumulative: the last chunk
	lens  []int  // while cumulative: every chunk's length
	all   []byte // once deltas: the chunks joined
	delta bool
}

func (s *seqAcc) join(dst, part []byte) []byte {
	if s.list && len(dst) > 0 && len(part) > 0 {
		dst = append(dst, ',')
	}
	return append(dst, part...)
}

// extends: c starts with s.last (at an element boundary for a list).
func (s *seqAcc) extends(c []byte) bool {
	if !bytes.HasPrefix(c, s.last) {
		return false
	}
	return !s.list || len(s.last) == 0 || len(c) == len(s.last) || c[len(s.last)] == ',' || c[len(s.last)] == ' '
}

func (s *seqAcc) add(c []byte) {
	switch {
	case s.delta:
		s.all = s.join(s.all, c)
	case len(s.lens) == 0 || s.extends(c):
		s.last = append(s.last, c[len(s.last):]...)
		s.lens = append(s.lens, len(c))
	default:
		s.toDelta()
		s.all = s.join(s.all, c)
	}
}

// toDelta rebuilds the deltas reading from the last chunk's prefixes.
func (s *seqAcc) toDelta() {
	if s.delta {
		return
	}
	s.delta = true
	for _, l := range s.lens {
		s.all = s.join(s.all, s.last[:l])
	}
	s.last, s.lens = nil, nil
}

func (s *seqAcc) value() []byte {
	if s.delta {
		return s.all
	}
	return s.last
}

func (a *generateAccumulator) chunk(data []byte) error {
	m, err := parse.Members(data)
	if err != nil {
		return fmt.Errorf("decode generate answer: %w", err)
	}
	if e := m["error"]; len(e) > 0 && string(e) != "null" {
		return fmt.Errorf("server error in the answer: %s", shorten(string(e), 300))
	}
	a.chunks++
	a.text.list, a.ids.list = false, true
	if t := m["text"]; len(t) > 0 && string(t) != "null" { // 2026: null in deferred chunks
		if t[0] != '"' {
			return fmt.Errorf("decode generate answer: text is not a string: %.40s", t)
		}
		a.hasText = true
		a.text.add(t[1 : len(t)-1])
	}
	nIDs := -1
	if v := m["output_ids"]; len(v) > 0 && string(v) != "null" {
		if v[0] != '[' {
			return fmt.Errorf("decode generate answer: output_ids is not a list: %.40s", v)
		}
		el := bytes.TrimSpace(v[1 : len(v)-1])
		nIDs = 0
		if len(el) > 0 {
			nIDs = bytes.Count(el, []byte{','}) + 1
		}
		a.ids.add(el)
	}
	if meta := m["meta_info"]; len(meta) > 0 && meta[0] == '{' {
		mm, err := parse.Members(meta)
		if err != nil {
			return fmt.Errorf("decode generate answer: meta_info: %w", err)
		}
		if n, err := strconv.Atoi(string(mm["prompt_tokens"])); err == nil {
			a.promptTok = n
		}
		if n, err := strconv.Atoi(string(mm["completion_tokens"])); err == nil {
			a.compTok, a.hasCompTok = n, true
			if nIDs >= 0 && nIDs < n && a.chunks > 1 {
				a.ids.toDelta() // fewer ids than the running count: deltas
			}
		}
		if fr := finishType(mm["finish_reason"]); fr != "" {
			a.finish, a.finishRaw = fr, bytes.Clone(mm["finish_reason"])
		}
	}
	return a.bound.check(int64(len(a.text.value())+len(a.ids.value())), a.chunks)
}

// streamed is the tokens received so far: meta_info's running
// completion_tokens, else the output ids.
func (a *generateAccumulator) streamed() int {
	if a.hasCompTok {
		return a.compTok
	}
	if el := bytes.TrimSpace(a.ids.value()); len(el) > 0 {
		return bytes.Count(el, []byte{','}) + 1
	}
	return 0
}

func (a *generateAccumulator) result() (Completion, error) {
	switch {
	case a.finish == "abort":
		return Completion{}, fmt.Errorf("%w: %s", ErrAborted, shorten(string(a.finishRaw), 200))
	case a.finish == "":
		return Completion{}, errors.New("generate answer ended without a finish_reason")
	}
	ids := make([]byte, 0, len(a.ids.value())+2)
	ids = append(append(append(ids, '['), a.ids.value()...), ']')
	var buf bytes.Buffer
	if err := json.Compact(&buf, ids); err != nil {
		return Completion{}, fmt.Errorf("decode output_ids: %w", err)
	}
	comp := Completion{PromptTokens: a.promptTok, CompletionTokens: a.compTok, FinishReason: a.finish, OutputIDs: buf.Bytes()}
	if !a.hasCompTok { // no meta_info count: the ids are the count
		comp.CompletionTokens = 0
		if el := a.ids.value(); len(bytes.TrimSpace(el)) > 0 {
			comp.CompletionTokens = bytes.Count(el, []byte{','}) + 1
		}
	}
	if a.hasText {
		s, err := decodeContent(a.text.value())
		if err != nil {
			return Completion{}, fmt.Errorf("decode generate text: %w", err)
		}
		comp.Text = &s
	}
	return comp, nil
}
