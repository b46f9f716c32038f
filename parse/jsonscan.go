package parse

import "encoding/binary"

// A validating scanner for one JSON object per line. It accepts exactly
// what encoding/json accepts (any bytes from 0x20 up inside strings, invalid
// UTF-8 included; nesting up to 10000 deep), and Python's NaN, Infinity and
// -Infinity, which json.dumps writes by default. It hands back the top-level
// members as raw spans, so a record is checked in one fast pass and only
// the few values resume needs are decoded.

const maxDepth = 10000 // encoding/json's limit

// strSafe marks the bytes that may stand in a string as they are.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return
}()

const (
	lo = 0x0101010101010101
	hi = 0x8080808080808080
)

// hasZero is non-zero when a byte of x is 0; hasLess when one is below n
// (n <= 128). Both are exact about whether such a byte exists.
func hasZero(x uint64) uint64    { return (x - lo) & ^x & hi }
func hasLess(x, n uint64) uint64 { return (x - lo*n) & ^x & hi }

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// scanString returns the end of the string token at b[i] (a '"'), or -1.
func scanString(b []byte, i int) int {
	j := i + 1
	for {
		// eight bytes at a time while none is a quote, a backslash or a
		// control byte
		for j+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[j:])
			if hasZero(x^(lo*'"'))|hasZero(x^(lo*'\\'))|hasLess(x, 0x20) != 0 {
				break
			}
			j += 8
		}
		for j < len(b) && strSafe[b[j]] {
			j++
		}
		if j >= len(b) {
			return -1
		}
		switch b[j] {
		case '"':
			return j + 1
		case '\\':
			if j+1 >= len(b) {
				return -1
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+5 >= len(b) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return -1
				}
				j += 6
			default:
				return -1
			}
		default: // a control byte
			return -1
		}
	}
}

// scanNumber returns the end of the number at b[i], or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return -1
		}
	}
	return i
}

func scanLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanValue returns the end of the valid JSON value at b[i], nested depth
// containers deep already, or -1.
func scanValue(b []byte, i, depth int) int {
	var stackBuf [32]byte
	stack := stackBuf[:0]
	for {
		// a value starts at i
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			i = scanString(b, i)
		case c == '{' || c == '[':
			depth++
			if depth > maxDepth {
				return -1
			}
			i = skipWS(b, i+1)
			if i < len(b) && (c == '{' && b[i] == '}' || c == '[' && b[i] == ']') {
				i++
				depth--
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i = scanMemberKey(b, i); i < 0 {
					return -1
				}
			}
			continue
		case c == 't':
			i = scanLiteral(b, i, "true")
		case c == 'f':
			i = scanLiteral(b, i, "false")
		case c == 'n':
			i = scanLiteral(b, i, "null")
		case c == 'N': // Python's json.dumps writes these by default (allow_nan)
			i = scanLiteral(b, i, "NaN")
		case c == 'I':
			i = scanLiteral(b, i, "Infinity")
		case c == '-' && i+1 < len(b) && b[i+1] == 'I':
			i = scanLiteral(b, i, "-Infinity")
		default:
			i = scanNumber(b, i)
		}
		// after a value: close containers, or go to the next element
		for {
			if i < 0 {
				return -1
			}
			if len(stack) == 0 {
				return i
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return -1
			}
			top := stack[len(stack)-1]
			if b[i] == ',' {
				i = skipWS(b, i+1)
				if top == '{' {
					i = scanMemberKey(b, i)
				}
				break
			}
			if top == '{' && b[i] == '}' || top == '[' && b[i] == ']' {
				stack = stack[:len(stack)-1]
				depth--
				i++
				continue
			}
			return -1
		}
		if i < 0 {
			return -1
		}
	}
}

// scanMemberKey reads `"key" :` at b[i] and returns where the value starts.
func scanMemberKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	i = scanString(b, i)
	if i < 0 {
		return -1
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipWS(b, i+1)
}

// member is one top-level member of an object: its raw key token (quotes
// included), where the key starts, and its raw value.
type member struct {
	key   []byte
	at    int
	value []byte
}

// scanObject checks that line is exactly one JSON object (surrounding
// whitespace allowed) and calls fn for each top-level member, in order.
// It returns false, with no promise about the calls made, if it is not.
// notObject is true when line is valid JSON but not an object.
func scanObject(line []byte, fn func(member)) (ok, notObject bool) {
	i := skipWS(line, 0)
	if i >= len(line) {
		return false, false
	}
	if line[i] != '{' {
		end := scanValue(line, i, 0)
		return false, end >= 0 && skipWS(line, end) == len(line)
	}
	i = skipWS(line, i+1)
	if i < len(line) && line[i] == '}' {
		return skipWS(line, i+1) == len(line), false
	}
	for {
		ks := i
		v := scanMemberKey(line, i)
		if v < 0 {
			return false, false
		}
		ke := scanString(line, ks)
		e := scanValue(line, v, 1)
		if e < 0 {
			return false, false
		}
		fn(member{key: line[ks:ke], at: ks, value: line[v:e]})
		i = skipWS(line, e)
		if i >= len(line) {
			return false, false
		}
		if line[i] == '}' {
			return skipWS(line, i+1) == len(line), false
		}
		if line[i] != ',' {
			return false, false
		}
		i = skipWS(line, i+1)
	}
}
