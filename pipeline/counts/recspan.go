package counts

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// The records' own times are the third witness of a running category's
// rate (parse.WitnessedRate), after worker.json's and the log's: the old
// script relaunched without PYTHONUNBUFFERED logs nothing and dates every
// record, and a one-shot status, the report and a first screen all have
// them. The poll's one request asks the host for them
// (remote.RecordSpanArgv: figures by the agent, the last bytes by the
// fallback) only where no fresher witness speaks: on a first poll, for
// every category written within the stall limit (which one is worked on
// is not known before the answer); after it, for the running categories
// whose rate neither worker.json nor the log witnessed at the last
// judgement, and those written within it that no worker is known on yet.
// A Go worker's steady poll asks nothing more.

// SpanArgv is this poll's ask for the records' span (nil: none).
func (k *Set) SpanArgv() []string {
	if k.spanMark == "" {
		var r [12]byte
		_, _ = crand.Read(r[:]) // never fails (Go 1.24+)
		k.spanMark = "@SWSPAN-" + hex.EncodeToString(r[:])
	}
	limit := parse.StallLimit(k.stallAfter)
	dir := k.lay.Prepared()
	if len(k.cats) == 0 {
		return remote.RecordSpanArgv(k.spanMark, dir, parse.RawFile, limit)
	}
	var cats []string
	for _, name := range k.order {
		if c := k.cats[name]; c != nil && c.spanAsk {
			cats = append(cats, name)
		}
	}
	if len(cats) == 0 {
		return nil
	}
	return remote.RecordSpanArgv(k.spanMark, dir, parse.RawFile, limit, cats...)
}

// readSpans is argv's answer: the poll's batch's (ask), or, when it did
// not answer, an exec of its own.
func readSpans(ctx context.Context, h remote.Host, argv []string, ask *remote.ExecAsk) ([]byte, bool) {
	res, ok := ask.Result()
	if !ok {
		var err error
		if res, err = h.Exec(ctx, argv...); err != nil {
			return nil, false
		}
	}
	if res.ExitCode != 0 {
		return nil, false
	}
	return res.Stdout, true
}

// foldSpans keeps each category's span from this poll's answer; one not
// asked, or asked and not answered, has none (a span is a first look's
// witness: never carried over from an older poll).
func (k *Set) foldSpans(out []byte, asked bool, loc *time.Location, now time.Time) {
	var spans map[string]parse.RecordSpan
	if asked {
		spans = remote.ParseRecordSpans(out, k.spanMark, loc, now)
	}
	for name, c := range k.cats {
		c.span = spans[name]
	}
}
