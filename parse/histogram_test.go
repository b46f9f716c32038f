package parse

import (
	"math"
	"testing"
)

var inf = math.Inf(1)

func TestHistogramQuantile(t *testing.T) {
	h := Histogram{Bounds: []float64{0.1, 0.5, 1, inf}, Counts: []float64{10, 60, 100, 100}}
	for _, c := range []struct{ q, want float64 }{{0.05, 0.05}, {0.1, 0.1}, {0.5, 0.1 + 0.4*40/50}, {0.9, 0.5 + 0.5*30/40}, {1, 1}} {
		if got, ok := h.Quantile(c.q); !ok || !near(got, c.want) {
			t.Errorf("q%v = %v, want %v", c.q, got, c.want)
		}
	}
	if _, ok := (Histogram{Bounds: []float64{1, inf}, Counts: []float64{0, 0}}).Quantile(0.5); ok {
		t.Error("a quantile of no observations")
	}
}

// Deltas between polls: what the window gained; a server restarted
// between two polls (its buckets went down) counts from zero, as
// Prometheus's rate() does, and says so.
func TestHistogramSinceAndReset(t *testing.T) {
	b := []float64{0.1, 1, inf}
	old := Histogram{Bounds: b, Counts: []float64{100, 900, 1000}, Sum: 400}
	cur := Histogram{Bounds: b, Counts: []float64{100, 950, 1100}, Sum: 500}
	d, reset := cur.Since(old)
	if reset || d.Count() != 100 || d.Counts[0] != 0 || d.Counts[1] != 50 || d.Sum != 100 {
		t.Errorf("delta %+v reset %v", d, reset)
	}
	if p50, _ := d.Quantile(0.5); !near(p50, 1) { // half in (0.1,1], half above 1
		t.Errorf("p50 of the delta %v", p50)
	}
	restarted := Histogram{Bounds: b, Counts: []float64{0, 3, 4}, Sum: 2}
	d, reset = restarted.Since(cur)
	if !reset || d.Count() != 4 {
		t.Errorf("after a restart: %+v reset %v", d, reset)
	}
	other := Histogram{Bounds: []float64{0.5, inf}, Counts: []float64{5000, 6000}, Sum: 900}
	if _, reset := other.Since(cur); !reset {
		t.Error("other bounds not taken as a restart")
	}
}

// Histograms of engines with other buckets merge at the union of bounds.
func TestMergeHistograms(t *testing.T) {
	a := Histogram{Bounds: []float64{0.1, 1, inf}, Counts: []float64{1, 3, 4}, Sum: 2}
	b := Histogram{Bounds: []float64{0.5, 1, inf}, Counts: []float64{2, 2, 6}, Sum: 9}
	m := MergeHistograms(a, b)
	want := []float64{1, 3, 5, 10} // at 0.1: a 1, b 0; 0.5: a 1, b 2; 1: 3+2; inf: 4+6
	if len(m.Bounds) != 4 || m.Sum != 11 {
		t.Fatalf("%+v", m)
	}
	for i, w := range want {
		if m.Counts[i] != w {
			t.Errorf("bucket %v: %v, want %v", m.Bounds[i], m.Counts[i], w)
		}
	}
}
