// Package display holds what the pipeline's parts keep for the views to
// draw: a sparkline's samples (Samples) and a log tail's lines in a
// display ring (AddTail). It judges nothing.
package display

import (
	"math"
	"sync"
)

// Samples is a fixed ring of rate samples for sparklines.
type Samples struct {
	size int
	// v is nil while every sample so far was 0 (an idle category's, most
	// of 50,000): zeros counts them, and Values() is shared (idleValues)
	v     []float64
	zeros int
	i     int
	n     int
	// run counts the newest samples equal to the newest; out is the last
	// Values(), kept while a full ring of one value only rotates. Nothing
	// writes to a Values() slice.
	run int
	out []float64
}

// NewSamples keeps the newest n samples.
func NewSamples(n int) *Samples { return &Samples{size: n} }

// Add appends a sample; NaN is a gap.
func (s *Samples) Add(x float64) {
	if s.v == nil {
		if x == 0 {
			if s.zeros < s.size {
				s.zeros, s.out = s.zeros+1, nil
			}
			return
		}
		// the first other value: the ring, holding the zeros so far
		s.v = make([]float64, s.size)
		s.n, s.i, s.run = s.zeros, s.zeros%s.size, s.zeros
	}
	if s.n > 0 && s.v[(s.i-1+len(s.v))%len(s.v)] == x {
		s.run++
	} else {
		s.run = 1
	}
	s.v[s.i] = x
	s.i = (s.i + 1) % len(s.v)
	if s.n < len(s.v) {
		s.n++
	}
	if s.run <= len(s.v) { // the ring holds more than one value: it changed
		s.out = nil
	}
}

// Values is oldest first; slots never filled are NaN (a gap, not a zero).
func (s *Samples) Values() []float64 {
	if s.out == nil && s.v == nil {
		s.out = idleValues(s.size, s.zeros)
	}
	if s.out == nil {
		s.out = s.fill()
	}
	return s.out
}

// idle holds the values of a ring of size slots, zeros of them 0 and the
// rest never filled, shared by every idle category of every watch.
var idle sync.Map // [2]int{size, zeros} → []float64

func idleValues(size, zeros int) []float64 {
	k := [2]int{size, zeros}
	if v, ok := idle.Load(k); ok {
		return v.([]float64)
	}
	v, _ := idle.LoadOrStore(k, (&Samples{size: size, zeros: zeros}).fill())
	return v.([]float64)
}

func (s *Samples) fill() []float64 {
	out := make([]float64, s.size)
	for k := range out {
		out[k] = math.NaN()
	}
	if s.v == nil {
		for k := s.size - s.zeros; k < s.size; k++ {
			out[k] = 0
		}
		return out
	}
	for k := 0; k < s.n; k++ {
		out[len(out)-s.n+k] = s.v[(s.i-s.n+k+len(s.v))%len(s.v)]
	}
	return out
}
