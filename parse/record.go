package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math/big"
	"slices"
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
func plainHead(line []byte) (RecordHead, error) {
	var id, ct, usage, meta []byte
	ok, notObject := scanObject(line, func(m member) {
		switch decodeKey(m.key) { // the last of duplicates wins
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
	n, ok := countTokens(ct)
	for _, sub := range [][]byte{usage, meta} {
		if ok {
			break
		}
		if len(sub) == 0 || sub[0] != '{' {
			continue
		}
		var v []byte
		scanObject(sub, func(m member) {
			if decodeKey(m.key) == "completion_tokens" {
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

// CanonicalKey returns the Key of one JSON value (see RecordHead.Key).
func CanonicalKey(raw []byte) (string, error) { return canonRaw(raw) }

func canonRaw(raw []byte) (string, error) {
	key, end, err := canonValue(nil, raw, 0, 0)
	if err != nil || skipWS(raw, end) != len(raw) {
		return "", errBadID
	}
	return string(key), nil
}

// AppendCanonical appends the canonical text of a value decoded by
// encoding/json with UseNumber (nil, bool, json.Number, string, []any,
// map[string]any) to b. A float64 is written as its shortest decimal.
func AppendCanonical(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case json.Number:
		if k, ok := canonNumber([]byte(v)); ok {
			return append(b, k...)
		}
		return appendCanonString(b, string(v)) // not reachable from a decoder
	case float64:
		k, _ := canonNumber(strconv.AppendFloat(nil, v, 'g', -1, 64))
		return append(b, k...)
	case string:
		return appendCanonString(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendCanonical(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonString(b, k)
			b = append(b, ':')
			b = AppendCanonical(b, v[k])
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

// appendCanonString quotes s, escaping only '"', '\\' and control bytes.
func appendCanonString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// canonNumber is the canonical text of a JSON number literal: its exact
// value as DIGITSeEXP with no leading or trailing zeros in DIGITS ("0" for
// zero, whatever its sign).
func canonNumber(lit []byte) (string, bool) {
	neg, digits, exp, ok := decNumber(lit)
	if !ok {
		return "", false
	}
	if digits == "" {
		return "0", true
	}
	b := make([]byte, 0, len(digits)+8)
	if neg {
		b = append(b, '-')
	}
	b = append(b, digits...)
	b = append(b, 'e')
	if exp != nil {
		b = strconv.AppendInt(b, *exp, 10)
	} else {
		b = append(b, bigExp(lit, digits)...)
	}
	return string(b), true
}

// decNumber splits a JSON number literal (strict grammar) into its value
// digits × 10^exp: digits without leading or trailing zeros ("" for zero).
// exp is nil when it does not fit an int64 (see bigExp).
func decNumber(lit []byte) (neg bool, digits string, exp *int64, ok bool) {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		neg = true
		i++
	}
	intStart := i
	switch {
	case i < len(lit) && lit[i] == '0':
		i++
	case i < len(lit) && lit[i] >= '1' && lit[i] <= '9':
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
	default:
		return false, "", nil, false
	}
	intPart := lit[intStart:i]
	var frac []byte
	if i < len(lit) && lit[i] == '.' {
		i++
		s := i
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
		if i == s {
			return false, "", nil, false
		}
		frac = lit[s:i]
	}
	var e int64
	eBig := false
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			eneg = lit[i] == '-'
			i++
		}
		s := i
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
		if i == s {
			return false, "", nil, false
		}
		v, err := strconv.ParseInt(string(lit[s:i]), 10, 64)
		if err != nil || v > 1<<60 {
			eBig = true
		}
		if eneg {
			v = -v
		}
		e = v
	}
	if i != len(lit) {
		return false, "", nil, false
	}
	all := make([]byte, 0, len(intPart)+len(frac))
	all = append(all, intPart...)
	all = append(all, frac...)
	lead := 0
	for lead < len(all) && all[lead] == '0' {
		lead++
	}
	all = all[lead:]
	trail := 0
	for trail < len(all) && all[len(all)-1-trail] == '0' {
		trail++
	}
	all = all[:len(all)-trail]
	if len(all) == 0 {
		return neg, "", new(int64), true
	}
	if eBig {
		return neg, string(all), nil, true
	}
	x := e - int64(len(frac)) + int64(trail)
	return neg, string(all), &x, true
}

// bigExp is the canonical exponent of a literal whose exponent does not fit
// an int64, computed exactly.
func bigExp(lit []byte, digits string) string {
	s := string(lit)
	ePos := bytes.IndexAny(lit, "eE")
	mant := s[:ePos]
	e, _ := new(big.Int).SetString(s[ePos+1:], 10)
	fracLen := 0
	if dot := bytes.IndexByte([]byte(mant), '.'); dot >= 0 {
		fracLen = len(mant) - dot - 1
	}
	// trailing zeros removed from the whole mantissa digits
	md := make([]byte, 0, len(mant))
	for i := 0; i < len(mant); i++ {
		if mant[i] >= '0' && mant[i] <= '9' {
			md = append(md, mant[i])
		}
	}
	trail := 0
	for trail < len(md) && md[len(md)-1-trail] == '0' {
		trail++
	}
	_ = digits
	e.Sub(e, big.NewInt(int64(fracLen)))
	e.Add(e, big.NewInt(int64(trail)))
	return e.String()
}

// stringEnd returns the length of the JSON string token at the start of b,
// quotes included, or -1.
func stringEnd(b []byte) int {
	i := 1
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		k := i + j
		bs := 0
		for bs < k-1 && b[k-1-bs] == '\\' {
			bs++
		}
		if bs%2 == 0 {
			return k + 1
		}
		i = k + 1
	}
}

// skipValue returns the length of the JSON value at the start of b, which
// must be valid JSON there, or -1.
func skipValue(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	switch b[0] {
	case '"':
		return stringEnd(b)
	case '{', '[':
		depth := 0
		for i := 0; i < len(b); i++ {
			switch b[i] {
			case '"':
				n := stringEnd(b[i:])
				if n < 0 {
					return -1
				}
				i += n - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	i := 0
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// Members returns the top-level members of a line holding one JSON object
// (a BOM and surrounding whitespace allowed; Python's NaN and Infinity are
// accepted as values), by exact key, the last of duplicates winning, as
// Python's json.loads. The values alias line.
func Members(line []byte) (map[string][]byte, error) {
	m := map[string][]byte{}
	ok, notObject := scanObject(bytes.TrimPrefix(line, bom), func(mb member) {
		m[decodeKey(mb.key)] = mb.value
	})
	switch {
	case notObject:
		return nil, ErrNotObject
	case !ok:
		return nil, errInvalid
	}
	return m, nil
}
