package parse

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// Sanitize appends to dst a form of src that is safe to put on a terminal:
//   - C0 controls (but tab), DEL and C1 controls are removed;
//   - escape sequences (CSI, OSC, DCS, APC, PM, SOS, and short ESC forms) are
//     removed whole, in their 7-bit and 8-bit (C1) spellings, terminated or not;
//   - format characters (Unicode Cf: the bidi embeddings, overrides and
//     isolates U+202A–202E and U+2066–2069, the zero-width U+200B–200F and
//     U+2060, the BOM…) are removed: a U+202E in a name would otherwise
//     display the rest of the terminal line right to left;
//   - a carriage return collapses a `\r` progress line to its last state;
//   - invalid UTF-8 becomes U+FFFD;
//   - a URL's password becomes "***" (Redact): whatever a terminal shows
//     passed here.
//
// The output holds no byte below 0x20 except tab, and Sanitize(Sanitize(x))
// equals Sanitize(x). Clean ASCII takes a fast path and is copied as is.
func Sanitize(dst, src []byte) []byte {
	start := len(dst)
	if clean(src) {
		dst = append(dst, src...)
	} else {
		dst = sanitizeSlow(dst, src)
	}
	return redactFrom(dst, start)
}

// SanitizeString is Sanitize for strings; clean input is returned unchanged.
func SanitizeString(s string) string {
	if cleanString(s) {
		return Redact(s)
	}
	return string(redactFrom(sanitizeSlow(make([]byte, 0, len(s)), []byte(s)), 0))
}

// redactFrom redacts the URLs' passwords in dst[start:].
func redactFrom(dst []byte, start int) []byte {
	s := dst[start:]
	if bytes.IndexByte(s, '@') < 0 || !bytes.Contains(s, []byte("://")) {
		return dst
	}
	return append(dst[:start], redact(nil, s)...)
}

// SanitizeLine sanitises one line and then caps it at max bytes (if max > 0)
// on a rune boundary. Sanitising first means no half sequence survives.
func SanitizeLine(src []byte, max int) string {
	out := Sanitize(nil, src)
	return string(Truncate(out, max))
}

// SanitizeLineString is SanitizeLine for a string: a clean line within max
// is returned as it is, with no copy.
func SanitizeLineString(s string, max int) string {
	if cleanString(s) && (max <= 0 || len(s) <= max) {
		return Redact(s)
	}
	return SanitizeLine([]byte(s), max)
}

// Truncate cuts b to at most max bytes without splitting a UTF-8 rune.
func Truncate(b []byte, max int) []byte {
	if max <= 0 || len(b) <= max {
		return b
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return b[:cut]
}

func clean(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

func cleanString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// escape-sequence states
const (
	stGround = iota
	stEsc    // after ESC
	stEscInt // ESC + intermediate bytes (nF), waiting for the final byte
	stCSI    // inside a control sequence, waiting for a final byte
	stString // inside OSC/DCS/APC/PM/SOS, waiting for BEL or ST
	stStrEsc // inside a string, just saw ESC (maybe ST)
)

func sanitizeSlow(dst, src []byte) []byte {
	start := len(dst) // a carriage return rewinds the line to here
	state := stGround
	pendingCR := false
	for i := 0; i < len(src); {
		c := src[i]
		var r rune
		size := 1
		if c >= 0x80 {
			r, size = utf8.DecodeRune(src[i:])
		} else {
			r = rune(c)
		}
		i += size
		switch state {
		case stEsc:
			switch {
			case r == '[':
				state = stCSI
			case r == ']' || r == 'P' || r == '_' || r == '^' || r == 'X':
				state = stString
			case r >= 0x20 && r <= 0x2f:
				state = stEscInt
			case r == 0x1b:
				// ESC ESC: the first one is dropped, the second starts anew
			default:
				state = stGround // a two-byte escape (or junk): drop both
			}
			continue
		case stEscInt:
			if r >= 0x20 && r <= 0x2f {
				continue
			}
			state = stGround
			continue
		case stCSI:
			if r >= 0x20 && r <= 0x3f {
				continue // parameters and intermediates
			}
			state = stGround
			if r >= 0x40 && r <= 0x7e {
				continue // the final byte
			}
			if r == 0x1b {
				state = stEsc
				continue
			}
			// anything else ends the broken sequence and is handled below
		case stString:
			switch r {
			case 0x07, 0x9c:
				state = stGround
			case 0x1b:
				state = stStrEsc
			}
			continue
		case stStrEsc:
			if r == '\\' {
				state = stGround
			} else if r != 0x1b {
				state = stString
			}
			continue
		}
		// ground state
		switch {
		case r == 0x1b:
			state = stEsc
		case r == 0x9b:
			state = stCSI
		case r == 0x9d || r == 0x90 || r == 0x9f || r == 0x9e || r == 0x98:
			state = stString
		case r == '\r':
			pendingCR = true
		case r == '\t':
			dst = emitRune(dst, start, &pendingCR, r, size, src[i-size:i])
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			// other C0, DEL, other C1: dropped
		case r == utf8.RuneError && size == 1:
			dst = emitRune(dst, start, &pendingCR, utf8.RuneError, 0, nil)
		case r >= 0xad && unicode.Is(unicode.Cf, r):
			// a format character: invisible, or it reorders what follows
		default:
			dst = emitRune(dst, start, &pendingCR, r, size, src[i-size:i])
		}
	}
	return dst
}

// emitRune writes one visible rune. A carriage return seen before it means a
// progress redraw: the text written so far on this line is dropped.
func emitRune(dst []byte, start int, pendingCR *bool, r rune, size int, raw []byte) []byte {
	if *pendingCR {
		dst = dst[:start]
		*pendingCR = false
	}
	if size == 0 {
		return utf8.AppendRune(dst, r)
	}
	return append(dst, raw...)
}
