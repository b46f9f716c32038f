package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"strconv"
	"unicode/utf8"
)

// RecordHead is what resume and counting need from one JSONL record (or
// prompt line).
type RecordHead struct {
	// Key is a canonical, type-tagged text of the id's decoded JSON value:
	// two ids have the same Key exactly when they are the same JSON value.
	// Strings are compared after unescaping ("\u00e9" is "é"), numbers by
	// exact decimal value (7, 7.0 and 7e0 are one id; 7 and "7" are two),
	// objects with sorted keys (a duplicate key: the last one wins). Key is
	// itself valid JSON: a string as a quoted string, a number as
	// DIGITSeEXP ("7e0", "15e-1", "0"), objects and arrays canonically.
	Key string
	// ID is the id token, compacted, valid JSON: what to write back into a
	// record. On the sealed fast path it may alias the line.
	ID json.RawMessage
	// CompletionTokens is the record's top-level completion_tokens, else
	// usage.completion_tokens, else meta_info.completion_tokens, when one of
	// them is a non-negative integral number (100, 100.0, 1e2) or a string
	// holding one ("100"). HasTokens says whether one was found.
	CompletionTokens int64
	HasTokens        bool
}

var (
	idHead   = []byte(`{"id":`)
	ctMarker = []byte(`,"completion_tokens":`)
	bom      = []byte("\xef\xbb\xbf")
	// ErrNoID is returned for a record whose "id" is missing or null.
	ErrNoID = errors.New("record has no id")
	// ErrNotObject is returned for a line that is valid JSON but not an object.
	ErrNotObject = errors.New("line is not a JSON object")
)

// The seal is the last field of a record the worker wrote:
// ,"sw_crc":"xxxxxxxx"} with the CRC-32C of every byte before its comma.
const (
	sealHead = `,"sw_crc":"`
	sealLen  = len(sealHead) + 8 + len(`"}`)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SealRecord returns obj, one compact JSON object, with a last field
// "sw_crc" holding the CRC-32C (Castagnoli) of the bytes before that field,
// and a final '\n'. A trailing '\n' on obj is dropped first. ParseRecordHead
// reads a line whose seal checks without decoding it.
//
// Only records the fast path reads exactly as a full decode would are
// sealed: valid JSON, "id" the first key and the only top-level "id", and
// one top-level "completion_tokens" that is the first ,"completion_tokens":
// in the bytes. Anything else comes back unsealed (with its '\n'); it is
// still read correctly, by the full decode.
func SealRecord(obj []byte) []byte {
	obj = bytes.TrimSuffix(obj, []byte{'\n'})
	if !sealable(obj) {
		out := make([]byte, 0, len(obj)+1)
		return append(append(out, obj...), '\n')
	}
	body := obj[:len(obj)-1]
	out := make([]byte, 0, len(body)+sealLen+1)
	out = append(out, body...)
	out = append(out, sealHead...)
	out = appendHex8(out, crc32.Checksum(body, castagnoli))
	return append(out, '"', '}', '\n')
}

func appendHex8(b []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for s := 28; s >= 0; s -= 4 {
		b = append(b, digits[v>>uint(s)&0xf])
	}
	return b
}

func sealable(obj []byte) bool {
	if !bytes.HasPrefix(obj, idHead) || obj[len(obj)-1] != '}' {
		return false
	}
	ctAt := bytes.Index(obj, ctMarker)
	ids, cts, ctFirst := 0, 0, false
	ok, _ := scanObject(obj, func(m member) {
		switch decodeKey(m.key) {
		case "id":
			ids++
		case "completion_tokens":
			cts++
			ctFirst = m.at-1 == ctAt && obj[m.at+len(m.key)] == ':'
		}
	})
	return ok && ids == 1 && cts == 1 && ctFirst
}

func decodeKey(tok []byte) string {
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1])
	}
	var s string
	_ = json.Unmarshal(tok, &s)
	return s
}

// ParseRecordHead reads the id (and completion tokens) of one JSONL line,
// given without its '\n'. A leading UTF-8 BOM and surrounding whitespace
// (a CRLF's '\r') are accepted. A line that is not one valid JSON object is
// an error; so is one whose "id" (the exact, case-sensitive key; the last of
// duplicates, as Python's json.loads) is missing or null (ErrNoID).
//
// A line sealed by SealRecord whose checksum holds is read without decoding
// it; every other line is decoded in full.
func ParseRecordHead(line []byte) (RecordHead, error) {
	if h, ok := fastHead(line); ok {
		return h, nil
	}
	return plainHead(bytes.TrimPrefix(line, bom))
}

// sealed reports whether line ends with a seal whose checksum holds, and
// returns the bytes it covers.
func sealed(line []byte) ([]byte, bool) {
	if len(line) < len(idHead)+sealLen+1 {
		return nil, false
	}
	tail := line[len(line)-sealLen:]
	if string(tail[:len(sealHead)]) != sealHead || tail[sealLen-2] != '"' || tail[sealLen-1] != '}' {
		return nil, false
	}
	var want uint32
	for _, c := range tail[len(sealHead) : len(sealHead)+8] {
		switch {
		case c >= '0' && c <= '9':
			want = want<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			want = want<<4 | uint32(c-'a'+10)
		default:
			return nil, false
		}
	}
	body := line[:len(line)-sealLen]
	return body, crc32.Checksum(body, castagnoli) == want
}

// fastHead reads a sealed record. It answers only what the seal proves and
// defers (false) on anything else.
func fastHead(line []byte) (RecordHead, bool) {
	if !bytes.HasPrefix(line, idHead) {
		return RecordHead{}, false
	}
	body, ok := sealed(line)
	if !ok {
		return RecordHead{}, false
	}
	rest := body[len(idHead):]
	var h RecordHead
	n := 0
	switch c := rest[0]; {
	case c == '"':
		j := bytes.IndexByte(rest[1:], '"')
		if j < 0 {
			return RecordHead{}, false
		}
		tok := rest[:j+2]
		if !plainString(tok[1 : len(tok)-1]) {
			n = -1
			break
		}
		h.ID, h.Key, n = tok, string(tok), len(tok)
	case c == '-' || c >= '0' && c <= '9':
		j := 1
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == len(rest) || rest[j] != ',' && rest[j] != '}' {
			n = -1
			break
		}
		key, ok := canonNumber(rest[:j])
		if !ok {
			return RecordHead{}, false
		}
		h.ID, h.Key, n = rest[:j], key, j
	default:
		n = -1
	}
	if n < 0 { // not a plain string or integer: decode just the token
		n = skipValue(rest)
		if n <= 0 {
			return RecordHead{}, false
		}
		tok := rest[:n]
		if string(tok) == "null" {
			return RecordHead{}, false
		}
		key, err := canonRaw(tok)
		if err != nil {
			return RecordHead{}, false
		}
		h.ID, h.Key = compact(tok), key
	}
	after := rest[n:]
	i := bytes.Index(after, ctMarker)
	if i < 0 {
		return RecordHead{}, false
	}
	v := after[i+len(ctMarker):]
	j := 0
	for j < len(v) && j < 19 && v[j] >= '0' && v[j] <= '9' {
		j++
	}
	if j > 0 && j < 19 && j < len(v) && (v[j] == ',' || v[j] == '}') && (v[0] != '0' || j == 1) {
		t, _ := strconv.ParseInt(string(v[:j]), 10, 64)
		h.CompletionTokens, h.HasTokens = t, true
		return h, true
	}
	e := skipValue(v)
	if e <= 0 {
		return RecordHead{}, false
	}
	t, ok := countTokens(v[:e])
	if !ok {
		return RecordHead{}, false // the full decode looks at usage and meta_info
	}
	h.CompletionTokens, h.HasTokens = t, true
	return h, true
}

// plainString: the content of a string token that needs no unescaping and
// is already canonical.
func plainString(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	return utf8.Valid(s)
}

// errInvalid is the error for a line that is not valid JSON; the scanner
// does not say where (json.Valid does not either).
var errInvalid = errors.New("not valid JSON")

// plainHead validates the whole line in one pass and decodes only the
// members it needs: "id", and the completion tokens.
func plainHead(line []byte) (RecordHead, error) { return plainHeadWith(line, nil) }

// plainHeadWith is plainHead that also gathers, in the same pass, what
// the record's members say of its outcome (o: nil for none).
func plainHeadWith(line []byte, o *outcomeRaw) (RecordHead, error) {
	var id, ct, usage, meta []byte
	ok, notObject := scanObject(line, func(m member) {
		k := recordKey(m.key)
		if o != nil {
			o.take(k, m.value)
		}
		switch k { // the last of duplicates wins
		case "id":
			id = m.value
		case "completion_tokens":
			ct = m.value
		case "usage":
			usage = m.value
		case "meta_info":
			meta = m.value
		}
	})
	switch {
	case notObject:
		return RecordHead{}, ErrNotObject
	case !ok:
		return RecordHead{}, errInvalid
	case id == nil || string(id) == "null":
		return RecordHead{}, ErrNoID
	}
	key, err := canonRaw(id)
	if err != nil {
		return RecordHead{}, err
	}
	h := RecordHead{Key: key, ID: compact(id)}
	h.CompletionTokens, h.HasTokens = recordTokens(ct, usage, meta)
	return h, nil
}

// recordTokens reads a record's completion tokens from its top-level
// member, else from usage, else from meta_info (the raw member values).
func recordTokens(ct, usage, meta []byte) (int64, bool) {
	return memberCount("completion_tokens", ct, usage, meta)
}

// memberCount reads the count key from its top-level value top, else from
// usage's, else from meta_info's.
func memberCount(key string, top, usage, meta []byte) (int64, bool) {
	n, ok := countTokens(top)
	for _, sub := range [][]byte{usage, meta} {
		if ok {
			break
		}
		if len(sub) == 0 || sub[0] != '{' {
			continue
		}
		var v []byte
		scanObject(sub, func(m member) {
			if decodeKey(m.key) == key {
				v = m.value
			}
		})
		n, ok = countTokens(v)
	}
	return n, ok
}

// countTokens reads a token count: a non-negative integral JSON number
// (100, 100.0, 1e2) or a string holding one ("100"). Anything else: false.
func countTokens(raw []byte) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		raw = []byte(s)
	}
	neg, digits, exp, ok := decNumber(raw)
	if !ok || exp == nil || *exp < 0 || neg && digits != "" {
		return 0, false
	}
	if len(digits)+int(*exp) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		n = n*10 + int64(digits[i]-'0')
	}
	for i := int64(0); i < *exp; i++ {
		n *= 10
	}
	return n, true
}

func compact(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return json.RawMessage(bytes.Clone(raw))
	}
	return buf.Bytes()
}
