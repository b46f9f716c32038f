package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/remote"
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
			f.conn = remote.ConnState{Phase: remote.Connected}
			m, _ := newModel(f, 200, 50, Config{})
			if wrap {
				m = step(m, key("w"))
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// BenchmarkLongNight drives the real watcher and model through 10,000 polls
// while 100,000 log lines arrive, and reports RSS at the half and at the
// end. Target: <= 60 MB, and flat (end ≈ half).
func BenchmarkLongNight(b *testing.B) {
	for b.Loop() {
		root := b.TempDir()
		os.MkdirAll(filepath.Join(root, "logs"), 0o755)
		for i := 0; i < 10; i++ {
			d := filepath.Join(root, "prepared", fmt.Sprintf("B%d_cat", i))
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte(strings.Repeat(`{"id":1}`+"\n", 10)), 0o644)
		}
		wlog, _ := os.OpenFile(filepath.Join(root, "logs", "inference_all.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		raw, _ := os.OpenFile(filepath.Join(root, "prepared", "B3_cat", "raw_responses.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		clock := time.Now()
		w := pipeline.NewWatcher(remote.Local{}, pipeline.Options{Root: root, ServerURL: "http://127.0.0.1:1", Now: func() time.Time { return clock }}, nil)
		live := &Live{Name: "bench", H: remote.Local{}, W: w}
		m := New(live, Config{PollEvery: time.Second})
		m = step(m, teaSize(200, 50))
		var half float64
		for p := 0; p < 10000; p++ {
			var lines strings.Builder
			for k := 0; k < 10; k++ {
				fmt.Fprintf(&lines, "%d/100000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h \x1b[31mred\x1b[0m\n", p*10+k)
			}
			wlog.WriteString(lines.String())
			raw.WriteString(`{"id":"x","completion_tokens":1}` + "\n")
			clock = clock.Add(time.Second)
			s := w.Poll(b.Context())
			wl, sl := live.Logs()
			m = step(m, pollMsg{gen: m.gen, snap: s, worker: wl, server: sl})
			if p%100 == 0 {
				_ = m.View()
			}
			if p == 5000 {
				runtime.GC()
				half = testbin.RSSMB("self")
			}
		}
		runtime.GC()
		b.ReportMetric(half, "RSS_MB_half")
		b.ReportMetric(testbin.RSSMB("self"), "RSS_MB_end")
		wlog.Close()
		raw.Close()
	}
}
