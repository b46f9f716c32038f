package parse

import (
	"fmt"
	"strings"
	"time"
)

// TokenLedger sets the tokens a server generated against the tokens in
// the records the worker kept, for one run on one category, or summed
// over runs (a category's night, the whole night).
//
// | figure      | what it is                                                      | from                                                  |
// | ----------- | --------------------------------------------------------------- | ----------------------------------------------------- |
// | Generated   | the server's generation-token counter's increase over the run   | /metrics sglang:generation_tokens_total (or vLLM's), read at the run's start, every power sample and its end; a decrease is a server restart (the counter starts again: its new value is added) |
// | Kept        | completion tokens of the records written                        | each record's usage (completion_tokens)               |
// | Truncated   | of Kept: records that ended at max_tokens (finish_reason length) | the records' finish_reason                           |
// | Retried     | streamed by attempts that failed (retried, or given up)          | the worker's stream: /generate's running meta_info.completion_tokens; chat: one per content chunk (an estimate) |
// | Aborted     | streamed by requests in flight when the run stopped (a restart) | the same                                              |
// | Unexplained | Generated − (Kept + Retried + Aborted), over the runs with a counter | other clients of the server, tokens streamed before a counter reset, requests the worker never heard back from |
type TokenLedger struct {
	// Generated is null when no run had the server's counter
	Generated *int64 `json:"generated"`
	// GeneratedFrom is GenFromCounter or GenFromLog, or both joined when
	// summed runs differ
	GeneratedFrom string `json:"generated_from,omitempty"`
	// CounterResets: times the counter went down (a server restart); the
	// tokens between the last read and the restart are not in Generated
	CounterResets int   `json:"counter_resets,omitempty"`
	Kept          int64 `json:"kept"`
	Truncated     int64 `json:"truncated"`
	Retried       int64 `json:"retried"`
	Aborted       int64 `json:"aborted"`
	// KeptUnknown: kept records whose tokens the server did not say (not in Kept)
	KeptUnknown int64 `json:"kept_unknown_records,omitempty"`
	// Counted is Kept+Retried+Aborted of the runs that had a counter: what
	// Generated is set against
	Counted int64 `json:"counted"`
	// Uncounted: runs without the server's counter (their tokens are in
	// Kept, Retried, Aborted, not in Generated)
	Uncounted int `json:"uncounted_runs,omitempty"`
}

// Where Generated came from.
const (
	GenFromCounter = "counter" // /metrics' generation-token counter
	GenFromLog     = "log"     // the server log's throughput integrated (LoggedGeneration)
)

// Streamed is every token the worker itself received.
func (l TokenLedger) Streamed() int64 { return l.Kept + l.Retried + l.Aborted }

// Unexplained is the rest: what the counter says the server generated
// beyond what the worker streamed; false without a counter. Negative when
// the counter missed some (a restart between two reads).
func (l TokenLedger) Unexplained() (int64, bool) {
	if l.Generated == nil {
		return 0, false
	}
	return *l.Generated - l.Counted, true
}

// Wasted is what the worker streamed and did not keep whole: truncated,
// retried and aborted tokens.
func (l TokenLedger) Wasted() int64 { return l.Truncated + l.Retried + l.Aborted }

// AloneTolerance is the share of Generated the rest may be, and the
// counter still be read as this job's alone (a request cut between two
// reads of the counter, the usage chunks' rounding).
const AloneTolerance = 0.02

// Alone says the counter matches what the worker streamed: the server
// served this job only, so Generated is "for this job".
func (l TokenLedger) Alone() bool {
	u, ok := l.Unexplained()
	if !ok || *l.Generated <= 0 {
		return false
	}
	if u < 0 {
		u = -u
	}
	return float64(u) <= AloneTolerance*float64(*l.Generated)
}

// Add sums two ledgers (two runs, two categories).
func (l TokenLedger) Add(o TokenLedger) TokenLedger {
	out := TokenLedger{
		CounterResets: l.CounterResets + o.CounterResets,
		Kept:          l.Kept + o.Kept, Truncated: l.Truncated + o.Truncated,
		Retried: l.Retried + o.Retried, Aborted: l.Aborted + o.Aborted,
		KeptUnknown: l.KeptUnknown + o.KeptUnknown,
		Counted:     l.Counted + o.Counted, Uncounted: l.Uncounted + o.Uncounted,
	}
	if l.Generated != nil || o.Generated != nil {
		g := int64(0)
		for _, x := range []*int64{l.Generated, o.Generated} {
			if x != nil {
				g += *x
			}
		}
		out.Generated = &g
	}
	switch {
	case l.GeneratedFrom == "" || l.GeneratedFrom == o.GeneratedFrom:
		out.GeneratedFrom = o.GeneratedFrom
	case o.GeneratedFrom == "":
		out.GeneratedFrom = l.GeneratedFrom
	default:
		out.GeneratedFrom = GenFromCounter + "+" + GenFromLog
	}
	return out
}

// Text is the ledger in one line, the words every view prints:
// "generated 1.2M (server counter, shared: other clients too) = kept 1.0M
// (truncated 40k) + retried 30k + aborted 10k + unexplained 160k".
func (l TokenLedger) Text() string {
	rest := fmt.Sprintf("kept %s (truncated %s) + retried %s + aborted %s", ShortCount(l.Kept), ShortCount(l.Truncated), ShortCount(l.Retried), ShortCount(l.Aborted))
	var b strings.Builder
	u, ok := l.Unexplained()
	switch {
	case !ok:
		b.WriteString("generated ? (no server counter) ≥ " + rest)
	default:
		who := "server counter, more than the worker streamed: it counts other clients too, and what requests made after the worker let go of them"
		switch {
		case l.Alone():
			who = "server counter, for this job: it matches the worker's streams"
		case u < 0:
			who = "server counter, short of the worker's streams: a restart between two reads, or requests cut at a stop it counted after the run's last read"
		}
		if l.GeneratedFrom != "" && l.GeneratedFrom != GenFromCounter {
			who = strings.Replace(who, "server counter", "the server log's throughput integrated, an estimate", 1)
		}
		fmt.Fprintf(&b, "generated %s (%s) = %s + unexplained %s", ShortCount(*l.Generated), who, rest, signedShort(u))
	}
	if l.Uncounted > 0 && ok {
		fmt.Fprintf(&b, "; %d runs without a counter not in generated", l.Uncounted)
	}
	if l.CounterResets > 0 {
		fmt.Fprintf(&b, "; counter reset %d× (a server restart: generated is a lower bound)", l.CounterResets)
	}
	if l.KeptUnknown > 0 {
		fmt.Fprintf(&b, "; %d kept records without token counts", l.KeptUnknown)
	}
	return b.String()
}

func signedShort(n int64) string {
	if n < 0 {
		return "−" + ShortCount(-n)
	}
	return ShortCount(n)
}

// CounterSpan follows a monotonic counter read now and then (the server's
// generation tokens) and sums its increase; a read lower than the last is
// a restart of the server, whose counter starts again from zero.
type CounterSpan struct {
	last     float64
	started  bool
	Increase float64
	Resets   int
}

// Read adds one read of the counter.
func (c *CounterSpan) Read(v float64) {
	switch {
	case !c.started:
		c.started = true
	case v >= c.last:
		c.Increase += v - c.last
	default:
		c.Resets++
		c.Increase += v // counted from zero since the restart
	}
	c.last = v
}

// Started says the counter was read at least once.
func (c *CounterSpan) Started() bool { return c.started }

// LoggedGeneration integrates a server's logged generation throughput into
// tokens, where no counter is served (SGLang without --enable-metrics).
// SGLang's scheduler logs "gen throughput (token/s): X" on a decode batch
// line every decode_log_interval steps, X being the tokens decoded since
// its last such line over the time since (log_decode_stats:
// num_generated_tokens / gap_latency, python/sglang/srt/managers/
// scheduler_metrics_mixin.py): X times the time between a rank's two
// lines is the tokens between them. The log's times are to the second (or
// the millisecond), so it is an estimate. A rank's first line, and a line
// over MaxLoggedGap after its last (a restart between them), add nothing.
type LoggedGeneration struct {
	last   map[string]time.Time
	Tokens float64
	Lines  int // lines that added tokens
}

// MaxLoggedGap is the longest interval between two lines of a rank that
// is integrated.
const MaxLoggedGap = 10 * time.Minute

// maxLoggedRanks bounds the ranks followed (DP ranks, GPUs).
const maxLoggedRanks = 256

// Add takes one decode line of rank, written at at, with its throughput.
func (g *LoggedGeneration) Add(rank string, at time.Time, perSec float64) {
	if g.last == nil {
		g.last = map[string]time.Time{}
	}
	prev, ok := g.last[rank]
	if ok && at.After(prev) && at.Sub(prev) <= MaxLoggedGap && perSec >= 0 {
		g.Tokens += perSec * at.Sub(prev).Seconds()
		g.Lines++
	}
	if ok || len(g.last) < maxLoggedRanks {
		g.last[rank] = at
	}
}
