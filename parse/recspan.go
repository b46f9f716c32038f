package parse

import (
	"bytes"
	"errors"
	"io"
	"time"
)

// RecordSpan is what a category's last records say of its pace: how many
// of them finished within RateSpan of the newest, and the first and last
// of their times. The host agent sends these figures, not the bytes; the
// fallback's bytes and the digest's read give the same by TailRecordSpan.
type RecordSpan struct {
	Records     int64     // records within the window
	First, Last time.Time // the oldest and the newest of their times
}

// RecordTailMax bounds the last bytes of raw_responses.jsonl a reader
// hands TailRecordSpan (the agent and the digest); the fallback, which
// sends them across the link, reads RecordTailFallback.
const (
	RecordTailMax      = 256 << 10
	RecordTailFallback = 64 << 10
	// RecordTailGrow: where the bytes read hold fewer than
	// RecordTailLines whole records (long completions), each reader reads
	// this many times as much, once
	RecordTailGrow  = 4
	RecordTailLines = 3
)

// RecordTailShort says whether tail, the last bytes of a longer file,
// holds too few lines for a span: read RecordTailGrow times as much.
// (ReadRecordTail does.)
func RecordTailShort(tail []byte) bool {
	return bytes.Count(tail, []byte{'\n'}) < RecordTailLines
}

// TailRecordSpan reads the records of tail, the last bytes of a file
// (cut: they begin mid-file, so the first line is dropped as partial; a
// last line without its '\n' is being written and is dropped too). Each
// record's time is ParseRecordStamp's (finished_at, else the old script's
// timestamp, created_at, created or time; a zone-less time in loc). A
// line that is not a record, has no readable time, or a time after now,
// is no witness. The span is over the records whose times fall within
// RateSpan before the newest one: all of them when the bytes do not reach
// that far back.
func TailRecordSpan(tail []byte, cut bool, loc *time.Location, now time.Time) RecordSpan {
	if cut {
		i := bytes.IndexByte(tail, '\n')
		if i < 0 {
			return RecordSpan{}
		}
		tail = tail[i+1:]
	}
	if i := bytes.LastIndexByte(tail, '\n'); i >= 0 {
		tail = tail[:i+1]
	} else {
		return RecordSpan{}
	}
	var times []time.Time
	var last time.Time
	for len(tail) > 0 {
		i := bytes.IndexByte(tail, '\n')
		line := bytes.TrimSuffix(tail[:i], []byte{'\r'})
		tail = tail[i+1:]
		st, err := ParseRecordStamp(line, loc)
		if err != nil || !st.HasFinished || st.Finished.After(now) {
			continue
		}
		times = append(times, st.Finished)
		if st.Finished.After(last) {
			last = st.Finished
		}
	}
	var s RecordSpan
	from := last.Add(-RateSpan)
	for _, t := range times {
		if t.Before(from) {
			continue
		}
		s.Records++
		if s.First.IsZero() || t.Before(s.First) {
			s.First = t
		}
	}
	if s.Records > 0 {
		s.Last = last
	}
	return s
}

// spanSkew is how far ahead of now a span's newest record may be and
// still count: the host's clock and this one's differ by that much.
const spanSkew = time.Minute

// SpanRate is the rate per minute the records' own times witness, and
// whether it counts: at least two records a moment apart, the newest
// younger than the stall limit (and not ahead of now by more than clocks
// differ). A quiet spell longer than the records' usual gap is added to
// their span, as RateWindow does, so the figure falls while nothing
// arrives.
func SpanRate(s RecordSpan, now time.Time, limit time.Duration) (perMin float64, ok bool) {
	if s.Records < 2 || !s.Last.After(s.First) || s.Last.After(now.Add(spanSkew)) {
		return 0, false
	}
	quiet := now.Sub(s.Last)
	if quiet >= StallLimit(limit) {
		return 0, false
	}
	span := s.Last.Sub(s.First)
	if gap := span / time.Duration(s.Records-1); quiet > gap {
		span += quiet - gap
	}
	return float64(s.Records-1) / span.Minutes(), true
}

// ReadRecordTail reads the last RecordTailMax bytes of a file of size
// bytes from r, RecordTailGrow times as much when those hold too few
// lines (long completions), once; cut says they begin mid-file. The one
// read the agent and the report's digest make for TailRecordSpan.
func ReadRecordTail(r io.ReaderAt, size int64) (data []byte, cut bool, err error) {
	off := int64(0)
	for n := int64(RecordTailMax); ; n *= RecordTailGrow {
		off = max(size-n, 0)
		// one read of the size known, not ReadAll's doubling from 512 bytes
		// (a quarter megabyte a recent file on an agent's first poll)
		data = make([]byte, size-off)
		k, rerr := r.ReadAt(data, off)
		if data, err = data[:k], rerr; errors.Is(err, io.EOF) { // the file shrank since its size was taken
			err = nil
		}
		if err != nil || off == 0 ||
			n > RecordTailMax || !RecordTailShort(data) {
			return data, off > 0, err
		}
	}
}
