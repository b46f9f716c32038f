package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// BenchmarkView: View() at 200×50 with 10 categories and 5,000 buffered log
// lines of about 230 characters, with wrap off and on. Target: <= 2 ms each.
func BenchmarkView(b *testing.B) {
	for _, wrap := range []bool{false, true} {
		name := "wrap=off"
		if wrap {
			name = "wrap=on"
		}
		b.Run(name, func(b *testing.B) {
			f := newFake()
			f.snap = running()
			for i := 0; i < 5000; i++ {
				f.worker = append(f.worker, fmt.Sprintf("%d/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h ", i)+strings.Repeat("long completion text ", 8))
			}
			f.conn = snapshot.Connection{State: snapshot.LinkConnected}
			m, _ := newModel(f, 200, 50, Config{})
			if wrap {
				m = step(m, press("w"))
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// many is a Snapshot of n categories, as a root of 50,000 small folders
// reads: 3 prompts and 1 record each, none running.
func many(n int) snapshot.Snapshot {
	s := running()
	s.Categories = make([]snapshot.Category, n)
	for i := range s.Categories {
		s.Categories[i] = snapshot.Category{Name: fmt.Sprintf("C%05d", i), Class: "SHORT", Done: 1, Target: 3,
			Progress: 1.0 / 3, State: snapshot.StatePending, Rates: []float64{0, 0, 0}}
	}
	return s
}

// BenchmarkKeys50k: a key through the real Model's Update and View on a
// root of 50,000 categories at 200×50 (`j`, `?` twice, `tab` twice), and a
// poll's answer arriving (pollMsg, then View): what a user waits for after
// a key and what each idle poll costs the laptop's TUI. ms/key and ms/poll.
func BenchmarkKeys50k(b *testing.B) {
	f := newFake()
	f.snap = many(50000)
	f.conn = snapshot.Connection{State: snapshot.LinkConnected}
	m, _ := newModel(f, 200, 50, Config{})
	keys := []string{"j", "?", "?", "tab", "tab"}
	b.Run("key", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m = step(m, press(keys[i%len(keys)]))
			_ = m.View()
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(i), "ms/key")
	})
	b.Run("poll", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m = step(m, pollMsg{gen: m.gen, snap: f.snap})
			_ = m.View()
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(i), "ms/poll")
	})
}
