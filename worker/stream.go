package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"sync/atomic"
	"time"
)

// errIdle is the cause of a request cancelled for silence.
type errIdle struct{ gap time.Duration }

func (e errIdle) Error() string { return fmt.Sprintf("no data from the server for %s", e.gap) }

// stream POSTs body and hands every server-sent event's data to fn, until
// "[DONE]" or the end of the body. The request is cancelled only when the
// server stays silent for IdleGap, so a long completion that keeps
// producing tokens is never cut. A server that answers with plain JSON (no
// streaming) is handed to fn as one event.
func (c *Client) stream(ctx context.Context, path string, body any, fn func([]byte) error) error {
	gap := c.IdleGap
	if gap <= 0 {
		gap = DefaultIdleGap
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var fired atomic.Bool
	timer := time.AfterFunc(gap, func() { fired.Store(true); cancel(errIdle{gap}) })
	defer timer.Stop()
	wrap := func(err error) error {
		if fired.Load() {
			return errIdle{gap}
		}
		return err
	}

	resp, err := c.send(ctx, path, body)
	if err != nil {
		return wrap(err)
	}
	defer resp.Body.Close()
	timer.Reset(gap)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		data, err := io.ReadAll(io.LimitReader(&touchReader{resp.Body, timer, gap}, 64<<20))
		if err != nil {
			return wrap(fmt.Errorf("read answer: %w", err))
		}
		return fn(data)
	}
	sc := bufio.NewScanner(&touchReader{resp.Body, timer, gap})
	sc.Buffer(make([]byte, 4<<10), 64<<20) // grows for a long line; most chunks are small
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // blank separators, comments, event names
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			return nil
		}
		if err := fn(data); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return wrap(fmt.Errorf("read stream: %w", err))
	}
	return nil
}

// touchReader pushes the idle deadline back whenever bytes arrive.
type touchReader struct {
	r     io.Reader
	timer *time.Timer
	gap   time.Duration
}

func (t *touchReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.timer.Reset(t.gap)
	}
	return n, err
}

// streamError is an error object sent inside a stream or a 200 body.
func streamError(data []byte) error {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil || len(e.Error) == 0 || string(e.Error) == "null" {
		return nil
	}
	return fmt.Errorf("server error in the answer: %s", shorten(string(e.Error), 300))
}

// chatAccumulator joins a chat completion's chunks (or takes a whole
// non-streamed answer).
type chatAccumulator struct {
	content, reasoning strings.Builder
	hasContent, hasRsn bool
	finish             string
	promptTok, compTok int
	chunks             int
}

type chatDelta struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"` // vLLM >= 0.11
}

func (a *chatAccumulator) chunk(data []byte) error {
	if err := streamError(data); err != nil {
		return err
	}
	var ch struct {
		Choices []struct {
			Delta        *chatDelta      `json:"delta"`
			Message      *chatDelta      `json:"message"`
			FinishReason json.RawMessage `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(data, &ch); err != nil {
		return fmt.Errorf("decode chat answer: %w", err)
	}
	a.chunks++
	if ch.Usage != nil {
		a.promptTok, a.compTok = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
	}
	if len(ch.Choices) == 0 {
		return nil
	}
	c := ch.Choices[0]
	for _, d := range []*chatDelta{c.Delta, c.Message} {
		if d == nil {
			continue
		}
		if d.Content != nil {
			a.content.WriteString(*d.Content)
			a.hasContent = true
		}
		r := d.ReasoningContent
		if r == nil {
			r = d.Reasoning
		}
		if r != nil {
			a.reasoning.WriteString(*r)
			a.hasRsn = true
		}
	}
	if fr := finishType(c.FinishReason); fr != "" {
		a.finish = fr
	}
	return nil
}

func (a *chatAccumulator) result() (Completion, error) {
	switch {
	case a.finish == "abort":
		return Completion{}, ErrAborted
	case a.finish == "":
		return Completion{}, errors.New("chat answer ended without a finish_reason")
	}
	comp := Completion{PromptTokens: a.promptTok, CompletionTokens: a.compTok, FinishReason: a.finish}
	if a.hasContent {
		s := a.content.String()
		comp.Content = &s
	}
	if a.hasRsn {
		s := a.reasoning.String()
		comp.Reasoning = &s
	}
	return comp, nil
}

// generateAccumulator joins /generate chunks. SGLang sends text and
// output_ids cumulatively by default and incrementally with
// --incremental-streaming-output (older: --stream-output); the final
// completion_tokens tells which, so both are read right.
type generateAccumulator struct {
	lastText, allText  strings.Builder
	lastIDs, allIDs    []json.RawMessage
	cumulative         bool // every chunk so far extends the one before
	chunks             int
	finish             string
	finishRaw          json.RawMessage
	promptTok, compTok int
	hasText            bool
}

func (a *generateAccumulator) chunk(data []byte) error {
	if err := streamError(data); err != nil {
		return err
	}
	var ch struct {
		Text      *string           `json:"text"`
		OutputIDs []json.RawMessage `json:"output_ids"`
		Meta      struct {
			PromptTokens     int             `json:"prompt_tokens"`
			CompletionTokens int             `json:"completion_tokens"`
			FinishReason     json.RawMessage `json:"finish_reason"`
		} `json:"meta_info"`
	}
	if err := json.Unmarshal(data, &ch); err != nil {
		return fmt.Errorf("decode generate answer: %w", err)
	}
	if a.chunks == 0 {
		a.cumulative = true
	}
	a.chunks++
	if ch.Text != nil {
		a.hasText = true
		prev := a.lastText.String()
		if !strings.HasPrefix(*ch.Text, prev) {
			a.cumulative = false
		}
		a.allText.WriteString(*ch.Text)
		a.lastText.Reset()
		a.lastText.WriteString(*ch.Text)
	}
	if len(ch.OutputIDs) < len(a.lastIDs) {
		a.cumulative = false
	}
	a.allIDs = append(a.allIDs, ch.OutputIDs...)
	a.lastIDs = ch.OutputIDs
	a.promptTok, a.compTok = ch.Meta.PromptTokens, ch.Meta.CompletionTokens
	if fr := finishType(ch.Meta.FinishReason); fr != "" {
		a.finish, a.finishRaw = fr, ch.Meta.FinishReason
	}
	return nil
}

func (a *generateAccumulator) result() (Completion, error) {
	switch {
	case a.finish == "abort":
		return Completion{}, fmt.Errorf("%w: %s", ErrAborted, shorten(string(a.finishRaw), 200))
	case a.finish == "":
		return Completion{}, errors.New("generate answer ended without a finish_reason")
	}
	text, ids := a.lastText.String(), a.lastIDs
	switch {
	case len(a.lastIDs) == a.compTok && a.chunks > 1 && len(a.allIDs) != a.compTok:
	// cumulative: the last chunk holds everything
	case len(a.allIDs) == a.compTok || !a.cumulative:
		text, ids = a.allText.String(), a.allIDs
	}
	comp := Completion{PromptTokens: a.promptTok, CompletionTokens: a.compTok, FinishReason: a.finish}
	if a.hasText {
		comp.Text = &text
	}
	if ids == nil {
		ids = []json.RawMessage{}
	}
	raw, err := json.Marshal(ids)
	if err != nil {
		return Completion{}, err
	}
	comp.OutputIDs = raw
	return comp, nil
}

// finishType reads "stop", or {"type": "length", ...} as SGLang's /generate
// returns it, or the v0.1 string "FINISH_LENGTH: 128".
func finishType(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return legacyFinish(s)
	}
	var o struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Type
	}
	return ""
}

// legacyFinish maps SGLang v0.1's "FINISH_LENGTH: 128" spellings (an abort
// among them) to the names of today.
func legacyFinish(s string) string {
	word, _, _ := strings.Cut(s, ":")
	switch word {
	case "FINISH_LENGTH":
		return "length"
	case "FINISH_MATCHED_STR", "FINISH_MATCHED_TOKEN":
		return "stop"
	case "FINISH_ABORT":
		return "abort"
	}
	return s
}
