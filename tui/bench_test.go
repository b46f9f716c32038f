package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline"
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
			f.conn = pipeline.Connection{State: pipeline.LinkConnected}
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
