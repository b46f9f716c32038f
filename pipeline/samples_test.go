package pipeline

import (
	"math"
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
		if want := s.fill(); !same(got, want) {
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

// TestSamplesOfAnIdleCategory: a ring that only ever had zeros holds no
// ring of its own, and its values, NaN then zeros, are one slice shared
// by every ring of its size and count; its first other value starts the
// ring with the zeros before it.
func TestSamplesOfAnIdleCategory(t *testing.T) {
	a, b := newSamples(4), newSamples(4)
	for i := 0; i < 3; i++ {
		a.add(0)
		b.add(0)
	}
	nan := math.NaN()
	if got := a.values(); a.v != nil || !same(got, []float64{nan, 0, 0, 0}) || &got[0] != &b.values()[0] {
		t.Fatalf("idle: ring %v, values %v", a.v, got)
	}
	a.add(2)
	if got := a.values(); !same(got, []float64{0, 0, 0, 2}) {
		t.Fatalf("after a first rate: %v", got)
	}
	for i := 0; i < 5; i++ {
		b.add(0)
	}
	if got := b.values(); b.v != nil || !same(got, []float64{0, 0, 0, 0}) {
		t.Fatalf("idle past its size: ring %v, values %v", b.v, got)
	}
}

func same(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || x != x && y != y })
}
