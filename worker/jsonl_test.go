package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

func TestEachLine(t *testing.T) {
	t.Parallel()
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

// The sectioned, mapped scan of a large file gives what one plain pass gives: the same
// keys and tokens, the first record of a duplicated id, the same counts and
// line numbers, with sections cut anywhere, long lines across the cuts.
func TestScanSectionsMatchOnePass(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	var b bytes.Buffer
	b.WriteString("\ufeff")
	for i := 0; i < 3000; i++ {
		id := fmt.Sprint(rng.IntN(2500)) // some ids twice
		switch rng.IntN(8) {
		case 0:
			fmt.Fprintf(&b, "{\"id\": \"%s\", \"completion_tokens\": %d.0}\r\n", id, i) // Python, CRLF
		case 1:
			b.WriteString("{\"id\":\"glued\",\"prompt\x00\x00\n") // damaged
		case 2:
			fmt.Fprintf(&b, "{\"id\":%s,\"content\":%q}\n", id, strings.Repeat("x", rng.IntN(200000))) // long, unsealed
		case 3:
			b.WriteString("\n")
		default:
			line, err := encodeLine(record{ID: json.RawMessage(strconv.Quote(id)), Category: "A", CompletionTokens: i})
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
		}
	}
	path := filepath.Join(t.TempDir(), "raw.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	old := scanSectionMin
	defer func() { scanSectionMin = old }()
	scanSectionMin, useMap = 1<<62, false // the plain way: one pass of read(2)
	one, err := ScanFile(path)
	useMap = true
	if err != nil {
		t.Fatal(err)
	}
	oldWin := mapWindow
	defer func() { mapWindow = oldWin }()
	for i, min := range []int64{1 << 10, 100 << 10, 1 << 20, 1 << 62} {
		scanSectionMin = min
		mapWindow = []int64{8 << 10, 1 << 20, 32 << 20, 3 << 12}[i] // windows far shorter than some lines, too
		got, err := ScanFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(one, got) {
			t.Fatalf("sections of %d bytes: lines %d/%d bad %d/%d dups %d/%d keys %d/%d examples %v / %v",
				min, got.Lines, one.Lines, got.BadLines, one.BadLines, got.Duplicates, one.Duplicates,
				len(got.Tokens), len(one.Tokens), got.BadExamples, one.BadExamples)
		}
	}
	if one.BadLines == 0 || one.Duplicates == 0 || len(one.Tokens) < 1000 {
		t.Fatalf("the file lacks the cases: %+v", one.BadLines)
	}
}

// A file cut short under the mapped scan is an error, not a crash.
func TestMappedScanOfAShrinkingFileFails(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "raw.jsonl")
	os.WriteFile(path, bytes.Repeat([]byte(strings.Repeat("x", 999)+"\n"), 100), 0o644)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	err = eachMappedLine(f, 0, 100_000, func([]byte) {
		if lines++; lines == 1 {
			os.Truncate(path, 0) // another process cuts the file
		}
	})
	if err == nil || !strings.Contains(err.Error(), "changed under the scan") {
		t.Fatalf("after %d lines: %v", lines, err)
	}
}
