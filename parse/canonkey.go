package parse

import (
	"errors"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// The canonical key of an id, read straight from its JSON bytes so that two
// ids Python's json.loads keeps apart stay apart. encoding/json turns a lone
// surrogate escape ("x\ud800"), and each byte of invalid UTF-8, into U+FFFD,
// which made "x\ud800", "x\udc00" and "x\ufffd" one id. Here a string is the
// sequence of code points Python sees when it reads the line with
// errors="surrogateescape" (what json.dumps of a surrogateescape'd name writes,
// and the one way Python reads such a file without failing): a lone surrogate
// escape stays that surrogate, an escaped pair is joined, and a raw byte that
// is not UTF-8 is U+DC80+byte (Python's surrogateescape, PEP 383). The key
// writes a surrogate as a \udXXX escape, which no other code point produces
// (a literal backslash is written as \\).

var errBadID = errors.New("id is not valid JSON")

// canonValue appends the canonical text of the JSON value at b[i] (after
// optional whitespace) and returns it with the index just past the value.
func canonValue(out, b []byte, i, depth int) ([]byte, int, error) {
	i = skipWS(b, i)
	if i >= len(b) || depth > maxDepth {
		return nil, -1, errBadID
	}
	switch c := b[i]; {
	case c == '"':
		e := scanString(b, i)
		if e < 0 {
			return nil, -1, errBadID
		}
		return appendCanonToken(out, b[i+1:e-1]), e, nil
	case c == '[':
		out = append(out, '[')
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return append(out, ']'), i + 1, nil
		}
		for n := 0; ; n++ {
			if n > 0 {
				out = append(out, ',')
			}
			var err error
			if out, i, err = canonValue(out, b, i, depth+1); err != nil {
				return nil, -1, err
			}
			i = skipWS(b, i)
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == ']' {
				return append(out, ']'), i + 1, nil
			}
			return nil, -1, errBadID
		}
	case c == '{':
		type kv struct{ k, v []byte }
		var ms []kv
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return append(out, '{', '}'), i + 1, nil
		}
		for {
			i = skipWS(b, i)
			if i >= len(b) || b[i] != '"' {
				return nil, -1, errBadID
			}
			e := scanString(b, i)
			if e < 0 {
				return nil, -1, errBadID
			}
			k := appendCanonToken(nil, b[i+1:e-1])
			i = skipWS(b, e)
			if i >= len(b) || b[i] != ':' {
				return nil, -1, errBadID
			}
			v, j, err := canonValue(nil, b, i+1, depth+1)
			if err != nil {
				return nil, -1, err
			}
			// the last of duplicate keys wins, as in json.loads
			if at := slices.IndexFunc(ms, func(m kv) bool { return string(m.k) == string(k) }); at >= 0 {
				ms[at].v = v
			} else {
				ms = append(ms, kv{k, v})
			}
			i = skipWS(b, j)
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return nil, -1, errBadID
		}
		slices.SortFunc(ms, func(x, y kv) int { return compareBytes(x.k, y.k) })
		out = append(out, '{')
		for n, m := range ms {
			if n > 0 {
				out = append(out, ',')
			}
			out = append(append(append(out, m.k...), ':'), m.v...)
		}
		return append(out, '}'), i, nil
	case c == 't':
		return lit(out, b, i, "true")
	case c == 'f':
		return lit(out, b, i, "false")
	case c == 'n':
		return lit(out, b, i, "null")
	default:
		e := scanNumber(b, i)
		if e < 0 {
			return nil, -1, errBadID
		}
		k, ok := canonNumber(b[i:e])
		if !ok {
			return nil, -1, errBadID
		}
		return append(out, k...), e, nil
	}
}

func lit(out, b []byte, i int, s string) ([]byte, int, error) {
	e := scanLiteral(b, i, s)
	if e < 0 {
		return nil, -1, errBadID
	}
	return append(out, s...), e, nil
}

func compareBytes(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

// appendCanonToken appends the canonical quoted form of a string token's
// content s (between its quotes, scanString-valid).
func appendCanonToken(out, s []byte) []byte {
	out = append(out, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && s[i+1] == 'u':
			r := hex4(s[i+2:])
			i += 6
			if utf16.IsSurrogate(r) && r < 0xdc00 && i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
				if lo := hex4(s[i+2:]); lo >= 0xdc00 && lo < 0xe000 {
					r = utf16.DecodeRune(r, lo)
					i += 6
				}
			}
			out = appendCanonRune(out, r)
		case c == '\\':
			out = appendCanonRune(out, rune(unescape[s[i+1]]))
			i += 2
		case c < utf8.RuneSelf:
			out = appendCanonRune(out, rune(c))
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				r = 0xdc00 + rune(c) // surrogateescape
			}
			out = appendCanonRune(out, r)
			i += n
		}
	}
	return append(out, '"')
}

var unescape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		default:
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}

// appendCanonRune writes r as appendCanonString does, and a surrogate as
// its \udXXX escape.
func appendCanonRune(out []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch {
	case r == '"' || r == '\\':
		return append(out, '\\', byte(r))
	case r < 0x20:
		return append(out, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
	case utf16.IsSurrogate(r):
		return append(out, '\\', 'u', hex[r>>12], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	return utf8.AppendRune(out, r)
}
