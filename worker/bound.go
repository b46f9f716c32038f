package worker

import (
	"fmt"
)

// An answer's size is bounded by what max_tokens allows. A real server
// stops at max_tokens; a broken or hostile server or proxy that streams for
// ever used to grow the worker without bound (6.6 GB in 30 s, integrity
// review finding 7). Past the bound the request is ended, logged and kept in
// errors.jsonl: retrying would only fetch the same endless answer again.

// bytesPerToken is generous: a token is ~4 bytes of text, a JSON-escaped
// one (\uXXXX pairs) at most ~12, an output id ~7 with its comma; text and
// ids together stay well under it.
const (
	bytesPerToken = 64
	boundSlack    = 64 << 10 // the role chunk, usage, meta_info
	maxEventBytes = 64 << 20 // one event, whatever max_tokens says
)

// answerBound is how many answer bytes and how many events a request of
// maxTokens may bring. Each token comes in at most one event (SGLang's
// stream_interval 1, or a gateway that drops it); a few more carry the role,
// the finish and the usage.
type answerBound struct {
	maxTokens int
	bytes     int64
	events    int
}

func newAnswerBound(maxTokens int) answerBound {
	if maxTokens <= 0 {
		maxTokens = 4096 // the server's own cap when none is sent (CLIP_MAX_NEW_TOKENS)
	}
	return answerBound{maxTokens: maxTokens, bytes: int64(maxTokens)*bytesPerToken + boundSlack, events: 2*maxTokens + 64}
}

// eventLimit is the largest single event (line) the stream reader takes.
func (b answerBound) eventLimit() int {
	return int(min(2*b.bytes, maxEventBytes))
}

// check reports an answer grown past the bound: n bytes kept, events read.
func (b answerBound) check(n int64, events int) error {
	switch {
	case b.bytes == 0:
		return nil // no bound set (tests of the accumulators alone)
	case n > b.bytes:
		return &PermanentError{&ErrAnswerTooLarge{MaxTokens: b.maxTokens, Why: fmt.Sprintf("%d bytes, more than the %d that %d tokens allow", n, b.bytes, b.maxTokens)}}
	case events > b.events:
		return &PermanentError{&ErrAnswerTooLarge{MaxTokens: b.maxTokens, Why: fmt.Sprintf("%d events, more than %d tokens can bring", events, b.maxTokens)}}
	}
	return nil
}

// eventTooLarge is the error for one event (or a whole answer) past eventLimit.
func (b answerBound) eventTooLarge() error {
	return &PermanentError{&ErrAnswerTooLarge{MaxTokens: b.maxTokens, Why: fmt.Sprintf("more than %d bytes in one event", b.eventLimit())}}
}

// ErrAnswerTooLarge is an answer cut for growing past what max_tokens allows.
type ErrAnswerTooLarge struct {
	MaxTokens int
	Why       string
}

func (e *ErrAnswerTooLarge) Error() string {
	return fmt.Sprintf("answer ended by the worker: the server sent %s (max_tokens %d); a server that honours max_tokens never does", e.Why, e.MaxTokens)
}
