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
// streaming) is handed to fn as one event. whole > 0: the request asked
// for a whole answer, which sends nothing until it is done, so it is cut
// after whole instead, however it trickles in. No event (nor a whole
// answer) may be larger than bound allows; the accumulators bound the sum.
func (c *Client) stream(ctx context.Context, path string, body any, whole time.Duration, bound answerBound, fn func([]byte) error) error {
	gap := c.idleGap()
	var cause error = errIdle{gap}
	touch := func(t *time.Timer) { t.Reset(gap) }
	if whole > 0 {
		gap, cause, touch = whole, errWholeLimit{whole}, func(*time.Timer) {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var fired atomic.Bool
	timer := time.AfterFunc(gap, func() { fired.Store(true); cancel(cause) })
	defer timer.Stop()
	wrap := func(err error) error {
		if fired.Load() {
			return cause
		}
		return err
	}

	resp, err := c.send(ctx, path, body)
	if err != nil {
		return wrap(err)
	}
	defer resp.Body.Close()
	touch(timer)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		limit := int64(bound.eventLimit())
		data, err := io.ReadAll(io.LimitReader(&touchReader{resp.Body, timer, touch}, limit+1))
		if err != nil {
			return wrap(fmt.Errorf("read answer: %w", err))
		}
		if int64(len(data)) > limit {
			return bound.eventTooLarge()
		}
		return fn(data)
	}
	sc := bufio.NewScanner(&sseProgress{r: resp.Body, timer: timer, touch: touch})
	sc.Buffer(make([]byte, 4<<10), bound.eventLimit()) // grows for a long line; most chunks are small
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
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return bound.eventTooLarge()
	} else if err != nil {
		return wrap(fmt.Errorf("read stream: %w", err))
	}
	return nil
}

// touchReader pushes the idle deadline back whenever bytes arrive.
type touchReader struct {
	r     io.Reader
	timer *time.Timer
	touch func(*time.Timer)
}

func (t *touchReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.touch(t.timer)
	}
	return n, err
}

// sseProgress pushes the idle deadline back only for bytes of lines that
// are not SSE comments: a proxy's ": ping" or ": keep-alive" every few
// seconds used to hold a stream that sent nothing else for ever (integrity
// review finding 8). Blank separator lines do not count either.
type sseProgress struct {
	r     io.Reader
	timer *time.Timer
	touch func(*time.Timer)
	st    byte // sseLineStart, sseComment, sseData: where the last byte read left off
}

const (
	sseLineStart = iota
	sseComment
	sseData
)

func (t *sseProgress) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	moved := false
	for b := p[:n]; len(b) > 0; {
		if t.st == sseLineStart {
			switch b[0] {
			case '\n', '\r':
				b = b[1:]
				continue
			case ':':
				t.st = sseComment
			default:
				t.st = sseData
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		moved = moved || t.st == sseData
		if i < 0 {
			break
		}
		t.st, b = sseLineStart, b[i+1:]
	}
	if moved {
		t.touch(t.timer)
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
// non-streamed answer). The content is joined as the raw JSON string
// contents and decoded once at the end, so a UTF-16 surrogate pair split
// across two events (a JS gateway slicing strings) is one character, as
// Python's json.loads of each chunk plus concatenation keeps it. Only
// choice 0 is read: n > 1 is refused at start (checkSampling).
type chatAccumulator struct {
	content, reasoning []byte // raw JSON string contents, joined
	hasContent, hasRsn bool
	finish             string
	promptTok, compTok int
	hasUsage           bool
	chunks             int
	deltas             int // chunks that carried content or reasoning
	bound              answerBound
}

// streamed is the tokens received so far: the usage's count once sent,
// else one a chunk that carried text (SGLang's default stream_interval
// sends one token a chunk; a larger interval makes this an undercount).
func (a *chatAccumulator) streamed() int {
	if a.hasUsage {
		return a.compTok
	}
	return a.deltas
}

type chatDelta struct {
	Content          json.RawMessage `json:"content"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"` // vLLM >= 0.11
}

func (a *chatAccumulator) chunk(data []byte) error {
	if err := streamError(data); err != nil {
		return err
	}
	var ch struct {
		Choices []struct {
			Index        int             `json:"index"`
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
		a.promptTok, a.compTok, a.hasUsage = ch.Usage.PromptTokens, ch.Usage.CompletionTokens, true
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		for _, d := range []*chatDelta{c.Delta, c.Message} {
			if d == nil {
				continue
			}
			ok, err := appendStringContent(&a.content, d.Content)
			if err != nil {
				return fmt.Errorf("decode chat answer: content: %w", err)
			}
			a.hasContent = a.hasContent || ok
			r := d.ReasoningContent
			if len(r) == 0 || string(r) == "null" {
				r = d.Reasoning
			}
			ok, err = appendStringContent(&a.reasoning, r)
			if err != nil {
				return fmt.Errorf("decode chat answer: reasoning: %w", err)
			}
			a.hasRsn = a.hasRsn || ok
			a.deltas += carries(d.Content, r)
		}
		if fr := finishType(c.FinishReason); fr != "" {
			a.finish = fr
		}
	}
	return a.bound.check(int64(len(a.content)+len(a.reasoning)), a.chunks)
}

// carries is 1 when a chunk's content or reasoning is a non-empty string:
// a token streamed (chatAccumulator.streamed).
func carries(content, reasoning json.RawMessage) int {
	if (len(content) > 2 && content[0] == '"') || (len(reasoning) > 2 && reasoning[0] == '"') {
		return 1
	}
	return 0
}

// appendStringContent appends what is between the quotes of a JSON string
// token; false for a missing or null value.
func appendStringContent(dst *[]byte, tok []byte) (bool, error) {
	if len(tok) == 0 || string(tok) == "null" {
		return false, nil
	}
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return false, fmt.Errorf("not a string: %.40s", tok)
	}
	*dst = append(*dst, tok[1:len(tok)-1]...)
	return true, nil
}

// decodeContent decodes joined JSON string contents; an escaped pair split
// between two chunks is joined here.
func decodeContent(raw []byte) (string, error) {
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
}

func (a *chatAccumulator) result() (Completion, error) {
	switch {
	case a.finish == "abort":
		return Completion{}, ErrAborted
	case a.finish == "":
		return Completion{}, errors.New("chat answer ended without a finish_reason")
	}
	// a stream that ended without its usage chunk (cut after the finish, or
	// a server that ignores include_usage): the counts are unknown, not 0
	comp := Completion{PromptTokens: a.promptTok, CompletionTokens: a.compTok, FinishReason: a.finish, TokensUnknown: !a.hasUsage}
	if a.hasContent {
		s, err := decodeContent(a.content)
		if err != nil {
			return Completion{}, fmt.Errorf("decode chat content: %w", err)
		}
		comp.Content = &s
	}
	if a.hasRsn {
		s, err := decodeContent(a.reasoning)
		if err != nil {
			return Completion{}, fmt.Errorf("decode chat reasoning: %w", err)
		}
		comp.Reasoning = &s
	}
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
