package display

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSamplesValuesKeptOnlyWhileTheSame: Values() handed out again (an
// idle category's full ring of zeros) is always what a fresh fill gives,
// through runs of one value longer and shorter than the ring.
func TestSamplesValuesKeptOnlyWhileTheSame(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := NewSamples(8)
	kept := 0
	for i := 0; i < 5000; i++ {
		x := float64(r.IntN(3))
		if r.IntN(10) < 8 {
			x = 0 // long runs of zeros, as an idle category's
		}
		before := s.out
		s.Add(x)
		got := s.Values()
		if want := s.fill(); !same(got, want) {
			t.Fatalf("after %d adds: values %v, want %v", i+1, got, want)
		}
		if before != nil && &got[0] == &before[0] {
			kept++
		}
	}
	if kept == 0 {
		t.Fatalf("no Values() was kept across an add of the same value")
	}
}

// TestSamplesOfAnIdleCategory: a ring that only ever had zeros holds no
// ring of its own, and its values, NaN then zeros, are one slice shared
// by every ring of its size and count; its first other value starts the
// ring with the zeros before it.
func TestSamplesOfAnIdleCategory(t *testing.T) {
	a, b := NewSamples(4), NewSamples(4)
	for i := 0; i < 3; i++ {
		a.Add(0)
		b.Add(0)
	}
	nan := math.NaN()
	if got := a.Values(); a.v != nil || !same(got, []float64{nan, 0, 0, 0}) || &got[0] != &b.Values()[0] {
		t.Fatalf("idle: ring %v, values %v", a.v, got)
	}
	a.Add(2)
	if got := a.Values(); !same(got, []float64{0, 0, 0, 2}) {
		t.Fatalf("after a first rate: %v", got)
	}
	for i := 0; i < 5; i++ {
		b.Add(0)
	}
	if got := b.Values(); b.v != nil || !same(got, []float64{0, 0, 0, 0}) {
		t.Fatalf("idle past its size: ring %v, values %v", b.v, got)
	}
}

func same(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || x != x && y != y })
}
