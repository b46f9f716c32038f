package parse

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSanitize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text\twith tab", "plain text\twith tab"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"\x1b]0;evil title\x07after", "after"},
		{"\x1b]2;title\x1b\\after", "after"},
		{"\x1b]52;c;aGVsbG8=\x07clip", "clip"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1bP1$r0m\x1b\\dcs", "dcs"},
		{"\x1b_apc\x1b\\x", "x"},
		{"\x1b^pm\x1b\\x", "x"},
		{"\x1bXsos\x1b\\x", "x"},
		{"clear\x1b[2J\x1b[H", "clear"},
		{"\x1b[?1049h\x1b[?25lalt", "alt"},
		{"\x1b(Bcharset", "charset"},
		{"\x1b7save\x1b8", "save"},
		{"\x1bcreset", "reset"},
		{"unterminated \x1b[12;3", "unterminated "},
		{"unterminated osc \x1b]0;never ends", "unterminated osc "},
		{"trailing esc \x1b", "trailing esc "},
		{"c1 csi \u009b31mred", "c1 csi red"},
		{"c1 osc \u009d0;t\u009cafter", "c1 osc after"},
		{"c1 other \u0085x", "c1 other x"},
		{" 10%|#   |\r 50%|##  |\r100%|####|", "100%|####|"},
		{"windows line\r", "windows line"},
		{"nul\x00pad\x00", "nulpad"},
		{"bell\x07 bs\x08 del\x7f", "bell bs del"},
		{"bad \xff\xfe utf8", "bad \ufffd\ufffd utf8"},
		{"ok é ✓ 漢字", "ok é ✓ 漢字"},
		{"broken csi \x1b[31\xffx", "broken csi \ufffdx"},
		{"csi then esc \x1b[1\x1b[2mx", "csi then esc x"},
		{"\u202eevil-bidi-gpj.exe", "evil-bidi-gpj.exe"},
		{"a\u202ab\u202bc\u202cd\u202de\u2066f\u2067g\u2068h\u2069i", "abcdefghi"},
		{"zw\u200b\u200c\u200d\u200e\u200f\u2060j\ufeff", "zwj"},
		{"soft\u00adhyphen tag\U000E0041s", "softhyphen tags"},
		{"server http://admin:hunter2@h:1 é", "server http://admin:***@h:1 é"},
		{"server http://admin:hunter2@h:1", "server http://admin:***@h:1"},
		{"", ""},
	}
	for _, c := range cases {
		got := string(Sanitize(nil, []byte(c.in)))
		if got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
		if s := SanitizeString(c.in); s != c.want {
			t.Errorf("SanitizeString(%q) = %q", c.in, s)
		}
		checkSanitized(t, c.in, []byte(got))
	}
}

func TestSanitizeLineTruncatesAfterStripping(t *testing.T) {
	in := []byte("ab\x1b]0;" + strings.Repeat("x", 100) + "\x07cdé")
	if got := SanitizeLine(in, 5); got != "abcd" {
		t.Errorf("got %q", got) // "é" is two bytes: it does not fit and is not split
	}
}

// checkSanitized holds the invariants: no control byte but tab, valid UTF-8,
// and idempotence.
func checkSanitized(t *testing.T, in string, out []byte) {
	t.Helper()
	for _, r := range string(out) {
		if (r < 0x20 && r != '\t') || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Cf, r) {
			t.Fatalf("Sanitize(%q) kept control %U", in, r)
		}
	}
	if !utf8.Valid(out) {
		t.Fatalf("Sanitize(%q) = invalid UTF-8 %q", in, out)
	}
	if again := Sanitize(nil, out); !bytes.Equal(again, out) {
		t.Fatalf("not idempotent: %q -> %q -> %q", in, out, again)
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mx", "\x1b]0;t\x07", "a\rb", "\xff", "\u009b1m", "\x1bP\x1b\\", "\x1b\x1b[", "é\x1b]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := Sanitize(nil, in)
		checkSanitized(t, string(in), out)
		if SanitizeString(string(in)) != string(out) {
			t.Fatal("string and byte forms differ")
		}
		if l := SanitizeLine(in, 7); len(l) > 7 || !utf8.ValidString(l) {
			t.Fatalf("SanitizeLine cap broken: %q", l)
		}
	})
}

func BenchmarkSanitizeClean(b *testing.B) {
	line := []byte(strings.Repeat("[2026-02-03 14:07:00 TP0] Decode batch, #running-req: 72, token usage: 0.29\t", 4))
	dst := make([]byte, 0, len(line))
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		dst = Sanitize(dst[:0], line)
	}
}

func BenchmarkSanitizeEscapeHeavy(b *testing.B) {
	line := []byte(strings.Repeat("\x1b[1;31mERR\x1b[0m \x1b]0;t\x07 50%|##\r 60%|### é\xff ", 8))
	dst := make([]byte, 0, len(line))
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		dst = Sanitize(dst[:0], line)
	}
}
