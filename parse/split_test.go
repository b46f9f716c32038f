package parse

import (
	"bytes"
	"strings"
	"testing"
)

type got struct {
	line  string
	trunc bool
}

func feedAll(s *Splitter, chunks ...string) []got {
	var out []got
	emit := func(l []byte, tr bool) { out = append(out, got{string(l), tr}) }
	for _, c := range chunks {
		s.Feed([]byte(c), emit)
	}
	return out
}

func TestSplitterCarriesPartialLines(t *testing.T) {
	s := NewSplitter(0)
	out := feedAll(s, "ab", "c\nde", "f\n\ng", "h")
	want := []got{{"abc", false}, {"def", false}, {"", false}}
	if len(out) != len(want) {
		t.Fatalf("got %v", out)
	}
	for i := range want {
		if out[i] != want[i] {
			t.Errorf("%d: %v want %v", i, out[i], want[i])
		}
	}
	if s.Pending() != 2 {
		t.Errorf("pending %d", s.Pending())
	}
	var last []got
	s.Flush(func(l []byte, tr bool) { last = append(last, got{string(l), tr}) })
	if len(last) != 1 || last[0].line != "gh" || s.Pending() != 0 {
		t.Errorf("flush %v", last)
	}
}

func TestSplitterCapsLongLines(t *testing.T) {
	s := NewSplitter(8)
	// a long line in one chunk, one split over chunks, and one that hits the cap exactly while carried
	out := feedAll(s, strings.Repeat("x", 20)+"\nok\n", "123456", "789abc", "def\nnext\n", "12345678", "\nz\n")
	want := []got{{"xxxxxxxx", true}, {"ok", false}, {"12345678", true}, {"next", false}, {"12345678", false}, {"z", false}}
	if len(out) != len(want) {
		t.Fatalf("got %v", out)
	}
	for i := range want {
		if out[i] != want[i] {
			t.Errorf("%d: %v want %v", i, out[i], want[i])
		}
	}
}

func TestSplitterReset(t *testing.T) {
	s := NewSplitter(4)
	feedAll(s, "abcdefgh")
	s.Reset()
	out := feedAll(s, "xy\n")
	if len(out) != 1 || out[0].line != "xy" {
		t.Errorf("after reset: %v", out)
	}
}

func FuzzSplitter(f *testing.F) {
	f.Add([]byte("a\nbb\nccc"), 3, 2)
	f.Add([]byte(strings.Repeat("z", 100)+"\n\n"), 7, 16)
	f.Fuzz(func(t *testing.T, data []byte, max, chunk int) {
		if max <= 0 || max > 1<<12 || chunk <= 0 {
			return
		}
		s := NewSplitter(max)
		var lines [][]byte
		emit := func(l []byte, tr bool) {
			if len(l) > max {
				t.Fatalf("line of %d > max %d", len(l), max)
			}
			if bytes.IndexByte(l, '\n') >= 0 {
				t.Fatal("newline inside a line")
			}
			lines = append(lines, append([]byte(nil), l...))
		}
		for i := 0; i < len(data); i += chunk {
			s.Feed(data[i:min(i+chunk, len(data))], emit)
		}
		if n := bytes.Count(data, []byte{'\n'}); len(lines) < n {
			// every newline closes at most one line; over-long lines emit early, never late
			t.Fatalf("%d lines for %d newlines", len(lines), n)
		}
		// without over-long lines the output is exactly bytes.Split
		whole := bytes.Split(data, []byte{'\n'})
		short := true
		for _, w := range whole {
			short = short && len(w) < max
		}
		if short {
			if len(lines) != len(whole)-1 {
				t.Fatalf("got %d lines, want %d", len(lines), len(whole)-1)
			}
			for i := range lines {
				if !bytes.Equal(lines[i], whole[i]) {
					t.Fatalf("line %d = %q want %q", i, lines[i], whole[i])
				}
			}
		}
	})
}

func BenchmarkSplitter(b *testing.B) {
	data := bytes.Repeat([]byte(strings.Repeat("y", 200)+"\n"), 1000)
	s := NewSplitter(0)
	b.SetBytes(int64(len(data)))
	n := 0
	for b.Loop() {
		s.Feed(data, func([]byte, bool) { n++ })
	}
}
