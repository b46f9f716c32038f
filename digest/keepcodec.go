package digest

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// stampCodec writes a kept stamp in a few bytes: its flags, then, for a
// record, its time, time field, run, tokens and finish reason. A string
// is an index into the strings met so far, a new one spelled out once.
type stampCodec struct {
	strs []string
	idx  map[string]uint64
}

// The flags of a kept stamp.
const (
	kBlank = 1 << iota
	kBad
	kFinished
	kTokens
	kPrompt
	kGateEmpty
	kGateReasoned
	kGateStray
	kEmpty
	kAnswer
)

// Bounds on what is kept: a file of other strings is read, not kept.
const (
	maxKeptStrings = 1 << 16
	maxKeptString  = 1 << 10
)

var errKeptCorrupt = errors.New("corrupt entry")

// timeFieldCode is TimeField's code: 0 none, 1 FinishedField, 2+i
// TimeFields[i]; false for another.
func timeFieldCode(f string) (uint64, bool) {
	switch f {
	case "":
		return 0, true
	case parse.FinishedField:
		return 1, true
	}
	for i, t := range parse.TimeFields {
		if f == t {
			return uint64(2 + i), true
		}
	}
	return 0, false
}

func timeFieldOf(c uint64) (string, bool) {
	switch {
	case c == 0:
		return "", true
	case c == 1:
		return parse.FinishedField, true
	case c-2 < uint64(len(parse.TimeFields)):
		return parse.TimeFields[c-2], true
	}
	return "", false
}

// encode appends ls (a whole line's); false when it cannot be kept.
func (c *stampCodec) encode(b []byte, ls lineStamp) ([]byte, bool) {
	st := ls.st
	var fl uint64
	switch {
	case ls.blank:
		return binary.AppendUvarint(b, kBlank), true
	case ls.err != nil:
		return binary.AppendUvarint(b, kBad), true
	}
	for _, f := range []struct {
		on  bool
		bit uint64
	}{{st.HasFinished, kFinished}, {st.HasTokens, kTokens}, {st.HasPrompt, kPrompt}, {st.Gate.Empty, kGateEmpty},
		{st.Gate.Reasoned, kGateReasoned}, {st.Gate.Stray, kGateStray}, {st.Outcome.Empty, kEmpty}, {st.Outcome.Answer, kAnswer}} {
		if f.on {
			fl |= f.bit
		}
	}
	tf, ok := timeFieldCode(st.TimeField)
	if !ok {
		return b, false
	}
	b = binary.AppendUvarint(b, fl)
	if st.HasFinished {
		b = binary.AppendVarint(b, st.Finished.Unix()) // seconds: any year; nanoseconds would end in 2262
		b = binary.AppendUvarint(b, uint64(st.Finished.Nanosecond()))
	}
	b = binary.AppendUvarint(b, tf)
	if b, ok = c.appendString(b, st.Run); !ok {
		return b, false
	}
	b = binary.AppendVarint(b, st.CompletionTokens)
	b = binary.AppendVarint(b, st.PromptTokens)
	return c.appendString(b, st.Outcome.Finish)
}

func (c *stampCodec) appendString(b []byte, s string) ([]byte, bool) {
	if i, ok := c.idx[s]; ok {
		return binary.AppendUvarint(b, i), true
	}
	if len(c.strs) >= maxKeptStrings || len(s) > maxKeptString {
		return b, false
	}
	if c.idx == nil {
		c.idx = map[string]uint64{}
	}
	b = binary.AppendUvarint(b, uint64(len(c.strs)))
	b = binary.AppendUvarint(b, uint64(len(s)))
	c.idx[s] = uint64(len(c.strs))
	c.strs = append(c.strs, s)
	return append(b, s...), true
}

// decode reads one kept stamp; the strings it meets are known for the
// encodes that follow.
func (c *stampCodec) decode(r *keptReader) (lineStamp, error) {
	ls := lineStamp{complete: true}
	fl, err := r.uvarint()
	switch {
	case err != nil:
		return ls, err
	case fl == kBlank:
		ls.blank = true
		return ls, nil
	case fl == kBad:
		ls.err = errKeptBad
		return ls, nil
	case fl&(kBlank|kBad) != 0:
		return ls, errKeptCorrupt
	}
	st := &ls.st
	st.HasFinished, st.HasTokens, st.HasPrompt = fl&kFinished != 0, fl&kTokens != 0, fl&kPrompt != 0
	st.Gate = parse.GateFacts{Empty: fl&kGateEmpty != 0, Reasoned: fl&kGateReasoned != 0, Stray: fl&kGateStray != 0}
	st.Outcome.Empty, st.Outcome.Answer = fl&kEmpty != 0, fl&kAnswer != 0
	if st.HasFinished {
		sec, err := r.varint()
		if err != nil {
			return ls, err
		}
		ns, err := r.uvarint()
		if err != nil || ns >= 1e9 {
			return ls, errKeptCorrupt
		}
		st.Finished = time.Unix(sec, int64(ns))
	}
	tf, err := r.uvarint()
	if err != nil {
		return ls, err
	}
	var ok bool
	if st.TimeField, ok = timeFieldOf(tf); !ok {
		return ls, errKeptCorrupt
	}
	if st.Run, err = c.readString(r); err != nil {
		return ls, err
	}
	if st.CompletionTokens, err = r.varint(); err != nil {
		return ls, err
	}
	if st.PromptTokens, err = r.varint(); err != nil {
		return ls, err
	}
	st.Outcome.Finish, err = c.readString(r)
	return ls, err
}

// errKeptBad stands for the error of a line that is no record.
var errKeptBad = errors.New("not a record (kept)")

func (c *stampCodec) readString(r *keptReader) (string, error) {
	i, err := r.uvarint()
	switch {
	case err != nil:
		return "", err
	case i < uint64(len(c.strs)):
		return c.strs[i], nil
	case i > uint64(len(c.strs)) || len(c.strs) >= maxKeptStrings:
		return "", errKeptCorrupt
	}
	n, err := r.uvarint()
	if err != nil || n > maxKeptString {
		return "", errKeptCorrupt
	}
	b, err := r.bytes(n)
	if err != nil {
		return "", err
	}
	s := string(b)
	if c.idx == nil {
		c.idx = map[string]uint64{}
	}
	c.idx[s] = i
	c.strs = append(c.strs, s)
	return s, nil
}

// keptReader reads kept entries from memory.
type keptReader struct {
	b []byte
	i int
}

func (r *keptReader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 {
		return 0, errKeptCorrupt
	}
	r.i += n
	return v, nil
}

func (r *keptReader) varint() (int64, error) {
	v, n := binary.Varint(r.b[r.i:])
	if n <= 0 {
		return 0, errKeptCorrupt
	}
	r.i += n
	return v, nil
}

func (r *keptReader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.i) {
		return nil, errKeptCorrupt
	}
	b := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return b, nil
}
