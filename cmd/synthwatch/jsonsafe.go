package main

import (
	"bytes"
	"io"
	"strconv"
	"unicode"
	"unicode/utf16"
)

// termSafe is a writer for encoded JSON that a terminal may show (status
// --json, report --json, a fleet's): encoding/json leaves DEL, the C1
// controls and the format characters (Unicode Cf: the bidi overrides and
// isolates U+202A–202E and U+2066–2069, the zero-width U+200B–200F and
// U+2060…) raw, so a category folder another account named with U+202E
// would turn the rest of the line around. Each becomes its \uXXXX escape:
// JSON's structure is ASCII, so each is inside a string, and a program
// decoding the answer still gets the folder's true name.
type termSafe struct{ w io.Writer }

func (t termSafe) Write(p []byte) (int, error) {
	if _, err := t.w.Write(escapeTermUnsafe(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// termUnsafe is a rune encoding/json writes raw that a terminal acts on
// or hides.
func termUnsafe(r rune) bool {
	return r == 0x7f || r >= 0x80 && r <= 0x9f || r > 0x7f && unicode.Is(unicode.Cf, r)
}

// escapeTermUnsafe is b (encoded JSON) with each termUnsafe rune escaped;
// b itself when there is none.
func escapeTermUnsafe(b []byte) []byte {
	i := bytes.IndexFunc(b, termUnsafe)
	if i < 0 {
		return b
	}
	out := append(make([]byte, 0, len(b)+64), b[:i]...)
	esc := func(r rune) {
		out = append(out, `\u`...)
		h := strconv.FormatUint(uint64(r), 16)
		for n := len(h); n < 4; n++ {
			out = append(out, '0')
		}
		out = append(out, h...)
	}
	for _, r := range string(b[i:]) {
		switch {
		case !termUnsafe(r):
			out = append(out, string(r)...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			esc(r1)
			esc(r2)
		default:
			esc(r)
		}
	}
	return out
}
