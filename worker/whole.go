package worker

import (
	"fmt"
	"time"
)

// Whole answers. A gateway that drops sampling_params.stream_interval (the
// Shepherd Model Gateway, smg: its typed SamplingParams has no such field,
// smg-project/smg crates/protocols/src/sampling_params.rs @ cb001cff)
// leaves SGLang at its --stream-interval default of 1, and every chunk of a
// default (cumulative) stream holds the whole text and ids so far. A long
// answer then costs the sum of its prefixes on the wire: ~100 MB for 4,000
// tokens, where the whole answer is ~50 KB (BenchmarkGenerateWireBytes).
// The accumulator keeps memory linear, but not the bytes. So once a stream
// from a server shows it, later requests to that server ask for the whole
// answer ("stream": false), which SGLang sends once, at the end. A request
// already streaming finishes as it is.

// perTokenCumulative: a finished stream came in chunks far smaller than
// the interval asked (under a quarter of it on average) while a field was
// cumulative. Judged only on answers of at least 8 intervals, where an
// honoured interval gives at most tokens/asked+2 chunks (SGLang emits after
// token 1, asked+1, 2*asked+1, … and at the finish): 10 for 256 tokens,
// against 256 one token at a time, or ~85 with speculative decoding's
// 3 tokens a step. An interval asked below 5 is never "far more often".
func (a *generateAccumulator) perTokenCumulative(asked, tokens int) bool {
	cumulative := (a.hasText && !a.text.delta) || (len(a.ids.value()) > 0 && !a.ids.delta)
	return cumulative && asked > 0 && tokens >= 8*asked && a.chunks*asked > 4*tokens
}

// askedInterval is sampling_params.stream_interval as sent (0 if absent).
func askedInterval(sp map[string]any) int {
	switch v := sp["stream_interval"].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	}
	return 0
}

// wholeLimit replaces the idle gap for a whole answer, which sends nothing
// until it is done, so silence says nothing: the idle gap (a request queued
// or retracted behind a full batch) plus the idle gap again per 1,200
// tokens of max_new_tokens. At the default 5 min that is 4 tok/s, several
// times slower than a loaded decode, so only a request that hung reaches
// it: 47 min for the default 10,240 tokens. --idle-timeout scales it.
func (c *Client) wholeLimit(maxTokens int) time.Duration {
	gap := c.idleGap()
	return gap + time.Duration(max(maxTokens, 1))*gap/1200
}

func (c *Client) idleGap() time.Duration {
	if c.IdleGap > 0 {
		return c.IdleGap
	}
	return DefaultIdleGap
}

// wholeFor reports whether the server at base gets whole answers.
func (c *Client) wholeFor(base string) bool {
	c.wholeMu.Lock()
	defer c.wholeMu.Unlock()
	_, ok := c.whole[base]
	return ok
}

// askWhole records that base streams per token and tells OnWhole, once
// per server URL.
func (c *Client) askWhole(base string, chunks, tokens, asked int) {
	c.wholeMu.Lock()
	if _, ok := c.whole[base]; ok {
		c.wholeMu.Unlock()
		return
	}
	gap := c.idleGap()
	why := fmt.Sprintf("%s streamed /generate in %d cumulative chunks for %d tokens though stream_interval %d was asked (a gateway such as smg drops it), so each answer costs the sum of its prefixes on the wire: later requests ask it for whole answers (\"stream\": false), each given %s plus %s per 1,200 max_new_tokens instead of an idle timeout",
		base, chunks, tokens, asked, gap, gap)
	if c.whole == nil {
		c.whole = map[string]string{}
	}
	c.whole[base] = why
	c.wholeMu.Unlock()
	if c.OnWhole != nil {
		c.OnWhole(why)
	}
}

// errWholeLimit is the cause of a whole-answer request cut at wholeLimit.
type errWholeLimit struct{ limit time.Duration }

func (e errWholeLimit) Error() string {
	return fmt.Sprintf("no whole answer from the server within %s", e.limit)
}
