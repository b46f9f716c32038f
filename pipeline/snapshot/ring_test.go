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

// InsertAt puts older lines where a mark was opened, as a list without a
// cap would, and the ring keeps that list's newest lines: whatever came
// after the marks, however many marks are open at once (a host's servers
// share a ring), whichever is answered first, and when what came after a
// mark fills the ring.
func TestRingInsertAtIsTheUncappedList(t *testing.T) {
	for _, max := range []int{1, 4, 7, 50} {
		for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}} {
			for _, gap := range []int{0, 1, 3, 9} {
				r := NewRing(max)
				var all []string // every line, in place, with no cap
				var at []int     // each mark's place in all
				n := 0
				add := func(k int) {
					for range k {
						s := fmt.Sprint("l", n)
						n++
						r.Add(s)
						all = append(all, s)
					}
				}
				add(2)
				var marks []*Mark
				for range 3 {
					marks = append(marks, r.Mark())
					at = append(at, len(all))
					add(gap) // the mark's own first read (none: two marks at one place)
				}
				add(5)
				for _, i := range order {
					older := []string{fmt.Sprint("m", i, "a"), fmt.Sprint("m", i, "b")}
					r.InsertAt(marks[i], older)
					all = slices.Insert(all, at[i], older...)
					for j := range at {
						if j != i && (at[j] > at[i] || at[j] == at[i] && j > i) {
							at[j] += len(older)
						}
					}
					r.InsertAt(marks[i], []string{"twice"}) // used: nothing more goes there
				}
				add(1)
				want := all[len(all)-min(max, len(all)):]
				if got := r.Lines(); !slices.Equal(got, want) || r.Total() != int64(len(all)) {
					t.Fatalf("max=%d order=%v gap=%d: %q (total %d), want %q (total %d)", max, order, gap, got, r.Total(), want, len(all))
				}
			}
		}
	}
}

// A released mark takes no lines.
func TestRingReleasedMarkTakesNothing(t *testing.T) {
	r := NewRing(10)
	r.Add("a")
	m := r.Mark()
	r.Add("b")
	r.Release(m)
	r.InsertAt(m, []string{"x"})
	if got := r.Lines(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("%q", got)
	}
}
