package parse

// Canonical JSON values (RecordHead.Key: 7, 7.0 and 7e0 are one id; 7 and
// "7" are two), and the scanners the record reader shares with them.

import (
	"bytes"
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
)

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
