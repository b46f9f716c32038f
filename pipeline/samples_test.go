package pipeline

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSamplesValuesKeptOnlyWhileTheSame: values() handed out again (an
// idle category's full ring of zeros) is always what a fresh fill gives,
// through runs of one value longer and shorter than the ring.
func TestSamplesValuesKeptOnlyWhileTheSame(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := newSamples(8)
	kept := 0
	for i := 0; i < 5000; i++ {
		x := float64(r.IntN(3))
		if r.IntN(10) < 8 {
			x = 0 // long runs of zeros, as an idle category's
		}
		before := s.out
		s.add(x)
		got := s.values()
		if want := s.fill(); !slices.EqualFunc(got, want, func(a, b float64) bool { return a == b || a != a && b != b }) {
			t.Fatalf("after %d adds: values %v, want %v", i+1, got, want)
		}
		if before != nil && &got[0] == &before[0] {
			kept++
		}
	}
	if kept == 0 {
		t.Fatalf("no values() was kept across an add of the same value")
	}
}
