package worker

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestEachLine(t *testing.T) {
	var b strings.Builder
	var want []string
	for i := range 200 {
		l := fmt.Sprintf("line %d %s", i, strings.Repeat("x", i*7%50))
		if i%37 == 0 {
			l = ""
		}
		want = append(want, l)
		b.WriteString(l + "\n")
	}
	long := strings.Repeat("L", 9<<20) // longer than a chunk
	want = append(want, long, "tail without newline")
	b.WriteString(long + "\ntail without newline")
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(b.String()) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(b.String()[:5000])) },
		"half":     func() io.Reader { return iotest.HalfReader(strings.NewReader(b.String())) },
	} {
		var got []string
		if err := eachLine(r(), func(l []byte) { got = append(got, string(l)) }); err != nil {
			t.Fatal(err)
		}
		w := want
		if name == "one byte" {
			w = strings.Split(b.String()[:5000], "\n")
		}
		if len(got) != len(w) {
			t.Fatalf("%s: %d lines, want %d", name, len(got), len(w))
		}
		for i := range w {
			if got[i] != w[i] {
				t.Fatalf("%s: line %d: %.40q, want %.40q", name, i, got[i], w[i])
			}
		}
	}
	if err := eachLine(iotest.ErrReader(io.ErrUnexpectedEOF), func([]byte) {}); err != io.ErrUnexpectedEOF {
		t.Errorf("read error: %v", err)
	}
}
