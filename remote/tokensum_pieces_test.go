package remote

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A range summed in pieces side by side answers what one pass answers,
// to the byte: on records Python wrote (with runs, usage counts, null
// tokens), a blank and a bad line, and a torn last line; and a wave cut
// by the request's time ends at a line, the rest summed from there
// adding up to the whole. Python's json module counts the same records.
func TestPiecesSumWhatOnePassSums(t *testing.T) {
	dir := t.TempDir()
	a, b, p := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "raw_responses.jsonl")
	pyRun(t, pyWrite, a, "w", "60000", "7")
	pyRun(t, pyWrite, b, "w", "60000", "8")
	var whole [3]int64
	for _, f := range []string{a, b} {
		var n [3]int64
		if _, err := fmt.Sscan(pyRun(t, pyCount, f), &n[0], &n[1], &n[2]); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			whole[i] += n[i]
		}
	}
	da, errA := os.ReadFile(a)
	db, errB := os.ReadFile(b)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	all := append(append(append(da, "\nnot json\n"...), db...), `{"id": "torn", "completion_tokens": 5`...)
	if err := os.WriteFile(p, all, 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Size() < 4*pieceBytes {
		t.Fatalf("the file is %d bytes, want over %d: %v", fi.Size(), 4*pieceBytes, err)
	}
	rf, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	answer := func(s rangeSum) string {
		var b bytes.Buffer
		s.write(&b, 1)
		return b.String()
	}
	one, err := sumSerial(rf, 0, fi.Size(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if one.t.Records != whole[0] || one.t.Tokens != whole[1] || one.t.Unknown != whole[2] {
		t.Fatalf("one pass: records tokens unknown %+v, Python counts %v", one.t, whole)
	}
	saved := sumWorkers
	t.Cleanup(func() { sumWorkers = saved })
	for _, k := range []int{2, 3, 16} {
		sumWorkers = k
		pieces, err := sumRange(rf, 0, fi.Size(), 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := answer(pieces), answer(one); got != want || pieces.cut {
			t.Fatalf("%d at once: %q, one pass %q (cut %v)", k, firstLine(got), firstLine(want), pieces.cut)
		}
	}
	sumWorkers = 2
	first, err := sumRange(rf, 0, fi.Size(), 0, func() bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if !first.cut || first.bytes == 0 || first.bytes >= fi.Size() {
		t.Fatalf("a wave with its time run out: cut %v at %d of %d", first.cut, first.bytes, fi.Size())
	}
	nl := make([]byte, 1)
	if _, err := rf.ReadAt(nl, first.bytes-1); err != nil || nl[0] != '\n' {
		t.Fatalf("the cut wave ends at byte %d, not after a line", first.bytes)
	}
	rest, err := sumRange(rf, first.bytes, fi.Size()-first.bytes, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	first.merge(rest)
	first.cut = false
	if got, want := answer(first), answer(one); got != want {
		t.Fatalf("cut, then the rest: %q, one pass %q", firstLine(got), firstLine(want))
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// BenchmarkColdSum sums a records file whole, as a night written while
// no dashboard watched is summed once (SW_BENCH_ROOT_MB, default 128, of
// the old script's ~1 KB records): in one pass, and in pieces on the
// machine's cores. It reports MB/s.
func BenchmarkColdSum(b *testing.B) {
	mb := 128
	if v, err := strconv.Atoi(os.Getenv("SW_BENCH_ROOT_MB")); err == nil && v > 0 {
		mb = v
	}
	p := filepath.Join(b.TempDir(), "raw_responses.jsonl")
	var buf bytes.Buffer
	for i := 0; buf.Len() < mb<<20; i++ {
		fmt.Fprintf(&buf, `{"id": "c-%d", "timestamp": %d.25, "reasoning_content": "think think", "content": "%s", "finish_reason": "stop", "usage": {"prompt_tokens": 20, "completion_tokens": %d}}`+"\n",
			i, 1764900000+i, strings.Repeat("answer ", 120), i%4000)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	size := int64(buf.Len())
	saved := sumWorkers
	b.Cleanup(func() { sumWorkers = saved })
	for _, k := range []int{1, saved} {
		b.Run(fmt.Sprintf("pieces=%d", k), func(b *testing.B) {
			sumWorkers = k
			for b.Loop() {
				if s, err := sumRange(f, 0, size, 0, nil); err != nil || s.bytes != size {
					b.Fatal(s.bytes, err)
				}
			}
			b.ReportMetric(float64(size)/(1<<20)/(b.Elapsed().Seconds()/float64(b.N)), "MB/s")
		})
	}
}
