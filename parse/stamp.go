package parse

import (
	"bytes"
	"math"
	"strconv"
	"time"
)

// RecordStamp is what a report of the night needs of one record: when it
// finished, which run wrote it, and its completion tokens.
type RecordStamp struct {
	Finished    time.Time
	HasFinished bool // a time field was present and read as a time
	// TimeField is the member Finished came from: "finished_at", else the
	// first of TimeFields the record has that reads as a time.
	TimeField string
	Run       string
	// CompletionTokens is read as RecordHead reads it (top level, then
	// usage, then meta_info); HasTokens says whether one was found.
	CompletionTokens int64
	HasTokens        bool
	// Outcome is how it ended, and PromptTokens its prompt's count, as
	// ParseRecordFacts reads them
	Outcome      Outcome
	PromptTokens int64
	HasPrompt    bool
	Gate         GateFacts // what the training-readiness gate reads of it

}

var finishedKey, ctKey = []byte(`"finished_at"`), []byte(`"completion_tokens"`) // runKey: recordfacts.go

// FinishedField is the worker's own time of a record.
const FinishedField = "finished_at"

// TimeFields are the top-level members other tools put a record's time in
// (a Python script's time.time() or datetime.isoformat(), an OpenAI
// response's created), read when a record has no finished_at, in this order.
var TimeFields = []string{"timestamp", "created_at", "created", "time"}

// ParseRecordStamp reads finished_at (else one of TimeFields), run and the
// completion tokens of one JSONL line, given without its '\n'; a BOM and a
// CRLF's '\r' are accepted. A line that is not one JSON object is an error.
// A time with no zone (Python's datetime.isoformat()) is read in loc; a
// number is Unix seconds (milliseconds when it is that large).
//
// A record sealed by SealRecord (the worker's) is read up to the members it
// needs, which the worker writes before the long text; the seal proves the
// rest is whole. Any other line is validated in full, as ParseRecordHead does.
func ParseRecordStamp(line []byte, loc *time.Location) (RecordStamp, error) {
	if s, ok := sealedStamp(line, loc); ok {
		return s, nil
	}
	var ct, usage, meta, run []byte
	var tr timeRaw
	o := outcomeRaw{times: &tr}
	ok, notObject := scanObject(bytes.TrimPrefix(line, bom), func(m member) {
		k := recordKey(m.key)
		o.take(k, m.value)
		switch k { // the last of duplicates wins, as json.loads
		case "completion_tokens":
			ct = m.value
		case "usage":
			usage = m.value
		case "meta_info":
			meta = m.value
		case "run":
			run = m.value
		}
	})
	switch {
	case notObject:
		return RecordStamp{}, ErrNotObject
	case !ok:
		return RecordStamp{}, errInvalid
	}
	var s RecordStamp
	s.CompletionTokens, s.HasTokens = recordTokens(ct, usage, meta)
	s.Outcome = o.judge()
	s.Gate = o.gate(s.Outcome)
	s.PromptTokens, s.HasPrompt = o.promptTokens()
	s.Finished, s.HasFinished, s.TimeField = tr.when(loc)
	s.Run = rawString(run)
	return s, nil
}

// sealedStamp walks a sealed record's members until it has the three it
// needs. It defers (false) on anything the slow path reads differently.
func sealedStamp(line []byte, loc *time.Location) (RecordStamp, bool) {
	if !bytes.HasPrefix(line, idHead) {
		return RecordStamp{}, false
	}
	body, ok := sealed(line)
	if !ok {
		return RecordStamp{}, false
	}
	var s RecordStamp
	var fin, run []byte
	haveCT := false
	i := 1
	for !(haveCT && fin != nil && run != nil) {
		v := scanMemberKey(body, i)
		if v < 0 {
			break
		}
		key := body[i:scanString(body, i)]
		e := scanValue(body, v, 1)
		if e < 0 {
			return RecordStamp{}, false
		}
		switch {
		case bytes.Equal(key, finishedKey):
			fin = body[v:e]
		case bytes.Equal(key, runKey):
			run = body[v:e]
		case bytes.Equal(key, ctKey):
			if s.CompletionTokens, s.HasTokens = countTokens(body[v:e]); !s.HasTokens {
				return RecordStamp{}, false // the slow path looks at usage and meta_info
			}
			haveCT = true
		}
		i = skipWS(body, e)
		if i >= len(body) || body[i] != ',' {
			break
		}
		i = skipWS(body, i+1)
	}
	if !haveCT || fin == nil { // no finished_at: the slow path reads the other time fields
		return RecordStamp{}, false
	}
	if s.Finished, s.HasFinished = stampTime(fin, loc); s.HasFinished {
		s.TimeField = FinishedField
	}
	s.Run = rawString(run)
	o := sealedOutcome(afterID(line))
	s.Outcome = o.judge()
	s.Gate = o.gate(s.Outcome)
	s.PromptTokens, s.HasPrompt = sealedPrompt(afterID(line))
	return s, true
}

func rawString(raw []byte) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	return decodeKey(raw)
}

// stampLayouts are the spellings of finished_at that tools write: Go's
// RFC 3339, Python's isoformat() with and without a zone, and a space for
// the T.
var stampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

// stampTime reads a finished_at value: a string in one of stampLayouts, or
// a Unix time in seconds or milliseconds (a number or a string of one).
func stampTime(raw []byte, loc *time.Location) (time.Time, bool) {
	if len(raw) == 0 {
		return time.Time{}, false
	}
	var txt string
	if raw[0] == '"' {
		var ok bool
		if txt, ok = jsonText(raw); !ok {
			return time.Time{}, false
		}
		for _, l := range stampLayouts {
			if t, err := time.ParseInLocation(l, txt, loc); err == nil {
				return t, true
			}
		}
	} else {
		txt = string(raw)
	}
	f, err := strconv.ParseFloat(txt, 64)
	if err != nil || math.IsNaN(f) || f <= 0 || f > 1e15 {
		return time.Time{}, false
	}
	if f > 1e11 { // after 5138 in seconds: milliseconds
		f /= 1000
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).In(loc), true
}
