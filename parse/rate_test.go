package parse

import (
	"math"
	"testing"
	"time"
)

// writer plays a writer against polls every poll: burst records every
// every (1 record every every/burst for a steady one), and returns the
// window's rate at the end.
func playRate(t *testing.T, r *RateWindow, start time.Time, dur, poll, every time.Duration, burst int64) (time.Time, int64) {
	t.Helper()
	var n int64
	now := start
	next := start.Add(every)
	for now.Before(start.Add(dur)) {
		now = now.Add(poll)
		for !next.After(now) {
			n += burst
			next = next.Add(every)
		}
		r.Add(now, n)
	}
	return now, n
}

func TestRateWindowSteadyAndBursty(t *testing.T) {
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name        string
		every       time.Duration
		burst       int64
		truthPerMin float64
	}{
		{"steady 600/min", 100 * time.Millisecond, 1, 600},
		{"steady 31/min", 60 * time.Second / 31, 1, 31},
		{"bursty 50 per 20s", 20 * time.Second, 50, 150},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r RateWindow
			now, _ := playRate(t, &r, start, 2*time.Minute, 2*time.Second, c.every, c.burst)
			got, ok := r.PerMin(now)
			if !ok {
				t.Fatal("no rate after two minutes")
			}
			if e := math.Abs(got-c.truthPerMin) / c.truthPerMin; e > 0.2 {
				t.Fatalf("rate %.1f/min, truth %.1f/min (error %.0f%%)", got, c.truthPerMin, e*100)
			}
			t.Logf("rate %.1f/min, truth %.1f/min", got, c.truthPerMin)
			// between bursts the figure holds; after a long quiet it falls
			if mid, _ := r.PerMin(now.Add(c.every / 2)); math.Abs(mid-got)/got > 0.2 {
				t.Errorf("half a gap later the rate moved from %.1f to %.1f", got, mid)
			}
			if late, _ := r.PerMin(now.Add(10 * time.Minute)); late > got/2 {
				t.Errorf("10 quiet minutes later the rate is still %.1f (was %.1f)", late, got)
			}
		})
	}
}

func TestRateWindowNeedsTwoGrowthsAndResets(t *testing.T) {
	var r RateWindow
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	r.Add(t0, 100)
	r.Add(t0.Add(time.Second), 100) // no growth: not an observation
	if _, ok := r.PerMin(t0.Add(2 * time.Second)); ok {
		t.Fatal("a rate from one observation")
	}
	r.Add(t0.Add(time.Second*5), 105) // a first burst: too soon to tell
	if _, ok := r.PerMin(t0.Add(5 * time.Second)); ok {
		t.Fatal("a rate from two growths")
	}
	r.Add(t0.Add(time.Minute), 160)
	if got, ok := r.PerMin(t0.Add(time.Minute)); !ok || got != 60 {
		t.Fatalf("rate %v %v, want 60", got, ok)
	}
	r.Add(t0.Add(2*time.Minute), 10) // recounted lower: start again
	if r.Observed() != 1 {
		t.Fatalf("after a shrink the window holds %d observations", r.Observed())
	}
}

// Memory stays flat: a day of growth every poll keeps a bounded window.
func TestRateWindowBounded(t *testing.T) {
	var r RateWindow
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := int64(1); i <= 43200; i++ {
		r.Add(t0.Add(time.Duration(i)*2*time.Second), i*1000)
	}
	if r.Observed() > rateKeep || cap(r.ev) > 2*rateKeep+1 {
		t.Fatalf("window holds %d (cap %d)", r.Observed(), cap(r.ev))
	}
	if got, _ := r.PerMin(t0.Add(86400 * time.Second)); math.Abs(got-30000) > 1 {
		t.Fatalf("rate %.1f, want 30000/min", got)
	}
}

// BenchmarkRateWindow is the worker's cost per record (one Add, as each
// completion lands) and the dashboard's per poll (one PerMin).
func BenchmarkRateWindow(b *testing.B) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var r RateWindow
	b.Run("Add", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r.Add(t0.Add(time.Duration(i)*25*time.Millisecond), int64(i+1))
		}
	})
	b.Run("PerMin", func(b *testing.B) {
		now := t0.Add(time.Hour)
		for i := 0; i < b.N; i++ {
			if _, ok := r.PerMin(now); !ok {
				b.Fatal("no rate")
			}
		}
	})
}
