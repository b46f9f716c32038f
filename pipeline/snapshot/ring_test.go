package snapshot

import (
	"fmt"
	"slices"
	"testing"
)

// AddEach keeps what Add would, and counts every line, but makes only the
// lines it keeps.
func TestRingAddEachIsAdd(t *testing.T) {
	for _, n := range []int{0, 3, 5, 6, 17} {
		for _, before := range []int{0, 2, 9} {
			a, b := NewRing(5), NewRing(5)
			for i := range before {
				a.Add(fmt.Sprint("old", i))
				b.Add(fmt.Sprint("old", i))
			}
			made := 0
			for i := range n {
				a.Add(fmt.Sprint(i))
			}
			b.AddEach(n, func(i int) string { made++; return fmt.Sprint(i) })
			if !slices.Equal(a.Lines(), b.Lines()) || a.Total() != b.Total() {
				t.Errorf("n=%d before=%d: AddEach kept %q (total %d), Add %q (total %d)", n, before, b.Lines(), b.Total(), a.Lines(), a.Total())
			}
			if made != min(n, 5) {
				t.Errorf("n=%d: made %d lines, want %d", n, made, min(n, 5))
			}
		}
	}
}
