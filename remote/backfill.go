package remote

import (
	"bytes"
	"context"
	"strconv"

	"github.com/synthwatch/synthwatch/parse"
)

// A backfill: a log's first read through the agent (Tail.FirstBack) sends
// as they are only the bytes a pane's first screen shows; the rest of
// what a plain attach shows (StartBack) rides in the next poll's request,
// a read of the bytes before the first read's start, with the history's
// digest up to them as a plain attach has it. The fold had all of it on
// the first read (the digest reaches up to the screen's bytes); the
// backfill is for the pane only.
//
// | the next poll is answered by | the backfill's lines |
// | --- | --- |
// | the agent | the history's digest up to StartBack, then the bytes up to the first read's start: what a plain attach showed |
// | the fallback (no digest) | those bytes only |
// | neither (the batch failed) | those bytes, read from the host |
// | a file truncated, replaced or gone | none: the bytes are another file's |

// backfill is what the first read left to a later poll.
type backfill struct {
	from, to int64 // the bytes before the first read's start
	// cut: the line the first read started in, from its start to its
	// newline, which that read dropped (a line it cannot know whole); the
	// backfill's bytes end with its start
	cut     []byte
	cutDone bool // the newline came (the backfill waits for it)
	tries   int
}

// fillTries bounds the polls a backfill's read may fail in before the
// pane goes without it.
const fillTries = 3

// screen is how far back a first attach through a digest reads as it is.
func (t *Tail) screen() int64 {
	if t.FirstBack > 0 && t.FirstBack < t.StartBack && t.Digest != "" && t.History > 0 {
		return t.FirstBack
	}
	return t.StartBack
}

func (t *Tail) maxLine() int {
	if t.MaxLine > 0 {
		return t.MaxLine
	}
	return parse.DefaultMaxLine
}

// fillDue is the backfill this poll asks, if any.
func (t *Tail) fillDue() *backfill {
	if t.attached && t.fill != nil && t.fill.cutDone {
		return t.fill
	}
	return nil
}

// dropFill gives the backfill up: the file is no longer the one read.
func (t *Tail) dropFill(up *TailUpdate) {
	if t.fill != nil {
		t.fill, up.OlderDone = nil, true
	}
}

// addCut keeps the bytes the first read dropped (data, up to its newline
// at nl, -1: none yet), up to one more than a line's cap: the splitter
// cuts a longer line as it would have.
func (f *backfill) addCut(data []byte, nl, maxLine int) {
	if f == nil || f.cutDone {
		return
	}
	part := data
	if nl >= 0 {
		part = data[:nl]
	}
	if room := maxLine + 1 - len(f.cut); room > 0 {
		f.cut = append(f.cut, part[:min(len(part), room)]...)
	}
	if nl >= 0 {
		f.cut, f.cutDone = append(f.cut, '\n'), true
	}
}

// fillOp is the batch's op for t's backfill: through the agent, taild at
// the plain attach's offset, its digest's history the plain attach's, and
// as many bytes as reach the first read's start; tail otherwise.
func (b *Batch) fillOp(t *Tail) {
	f := t.fillDue()
	if f == nil {
		return
	}
	from, n := strconv.FormatInt(f.from, 10), strconv.FormatInt(f.to-f.from, 10)
	b.ops = append(b.ops, len(b.args))
	if b.Digests {
		b.args = append(b.args, "taild", t.Path, from, n, strconv.FormatInt(t.History, 10), t.Digest)
		return
	}
	b.args = append(b.args, "tail", t.Path, from, n)
}

// olderIf reads f when this poll asked it and it still stands: the
// file read is the one its first read was of (the poll's stat answered).
func (t *Tail) olderIf(ctx context.Context, rd fileReads, f *backfill, up *TailUpdate) {
	if f != nil && t.fill == f && up.Err == nil {
		t.older(ctx, rd, f, up)
	}
}

// older reads f, the backfill this poll's batch asked, into up.Older: the
// digest the answer holds, then the lines of the bytes before the first
// read's start, the line that read started in whole.
func (t *Tail) older(ctx context.Context, rd fileReads, f *backfill, up *TailUpdate) {
	n := f.to - f.from
	data, err := rd.read(ctx, f.from, n)
	if err != nil && f.tries+1 < fillTries {
		f.tries++
		return // asked again by the next poll
	}
	t.fill, up.OlderDone = nil, true
	if err != nil || int64(len(data)) < n {
		return // the file is shorter than it was: not the file read
	}
	emit := func(l []byte, truncated bool) {
		up.Older = append(up.Older, Line{Text: string(l), Truncated: truncated})
	}
	if d, ok := rd.digest(); ok {
		parse.NewSplitter(t.MaxLine).Feed(d, emit)
	}
	raw := append(data[:n:n], f.cut...)
	if f.from > 0 { // a plain attach drops the line its first byte falls in
		i := bytes.IndexByte(raw, '\n')
		raw = raw[i+1:]
	}
	parse.NewSplitter(t.MaxLine).Feed(raw, emit)
}
