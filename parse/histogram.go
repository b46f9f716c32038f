package parse

import (
	"math"
	"sort"
)

// Histogram is one Prometheus histogram as exposed: cumulative counts,
// Counts[i] observations at most Bounds[i], the last bound +Inf.
type Histogram struct {
	Bounds []float64
	Counts []float64
	Sum    float64
}

// Count is the number of observations (the +Inf bucket).
func (h Histogram) Count() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// Since is what h gained since old, an earlier read of the same series.
// A bucket that went down, or other bounds, means the server restarted
// between the reads: everything h holds is then new since the restart,
// as Prometheus's rate() takes it, and reset is true.
func (h Histogram) Since(old Histogram) (d Histogram, reset bool) {
	if len(old.Counts) == 0 {
		return h, false
	}
	if !sameBounds(h.Bounds, old.Bounds) || h.Sum < old.Sum-1e-9 {
		return h, true
	}
	d = Histogram{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts)), Sum: h.Sum - old.Sum}
	for i := range h.Counts {
		if h.Counts[i] < old.Counts[i] {
			return h, true
		}
		d.Counts[i] = h.Counts[i] - old.Counts[i]
	}
	return d, false
}

func sameBounds(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// MergeHistograms adds histograms of several engines or windows into one.
// Histograms with other bounds (another server version, or buckets set by
// flags) are read at the union of the bounds: at a bound it lacks, a
// histogram counts what its next lower bound counts, never more than it
// observed there.
func MergeHistograms(hs ...Histogram) Histogram {
	var bounds []float64
	seen := map[float64]bool{}
	for _, h := range hs {
		for _, b := range h.Bounds {
			if !seen[b] {
				seen[b] = true
				bounds = append(bounds, b)
			}
		}
	}
	sort.Float64s(bounds)
	out := Histogram{Bounds: bounds, Counts: make([]float64, len(bounds))}
	for _, h := range hs {
		out.Sum += h.Sum
		j := -1
		for i, b := range bounds {
			for j+1 < len(h.Bounds) && h.Bounds[j+1] <= b {
				j++
			}
			if j >= 0 {
				out.Counts[i] += h.Counts[j]
			}
		}
	}
	return out
}

// Quantile is Prometheus's histogram_quantile: the bucket holding the
// q-th observation, interpolated linearly inside it (the first bucket
// from 0). In the +Inf bucket it is the highest finite bound, a floor.
// ok is false without observations.
func (h Histogram) Quantile(q float64) (v float64, ok bool) {
	n := h.Count()
	if n <= 0 || len(h.Bounds) < 2 || math.IsNaN(q) {
		return 0, false
	}
	rank := q * n
	for i, c := range h.Counts {
		if c < rank {
			continue
		}
		if math.IsInf(h.Bounds[i], 1) {
			return h.Bounds[len(h.Bounds)-2], true
		}
		lo, below := 0.0, 0.0
		if i > 0 {
			lo, below = h.Bounds[i-1], h.Counts[i-1]
		} else if h.Bounds[0] <= 0 {
			return h.Bounds[0], true
		}
		in := c - below
		if in <= 0 {
			return h.Bounds[i], true
		}
		return lo + (h.Bounds[i]-lo)*(rank-below)/in, true
	}
	return h.Bounds[len(h.Bounds)-2], true
}
