package tui

import (
	"context"
	"math"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// fake is a Backend with settable answers that records what it was asked.
type fake struct {
	mu       sync.Mutex
	snap     snapshot.Snapshot
	worker   []string
	server   []string
	conn     snapshot.Connection
	tl       *timeline.Timeline
	killed   []int
	launched [][]string
	restart  []string
	reconn   int
}

func newFake() *fake {
	return &fake{tl: timeline.New(100, ""), conn: snapshot.Connection{State: snapshot.LinkConnecting}}
}

func (f *fake) Host() string { return "root@10.1.230.174" }
func (f *fake) Poll(context.Context) snapshot.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap
}
func (f *fake) Logs() ([]string, []string)   { return f.worker, f.server }
func (f *fake) Link() snapshot.Connection    { return f.conn }
func (f *fake) Timeline() *timeline.Timeline { return f.tl }
func (f *fake) ReconnectNow()                { f.reconn++ }
func (f *fake) Launch(_ context.Context, only []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.launched = append(f.launched, only)
	return 4343, nil
}
func (f *fake) Kill(_ context.Context, pid int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, pid)
	return "gone", nil
}
func (f *fake) Restart(_ context.Context, cat string, all []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restart = append(f.restart, cat)
	return 4444, nil
}

var t0 = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

func fptr(v float64) *float64   { return &v }
func tp(t time.Time) *time.Time { return &t }

// running is a night in progress: 10 categories, one running.
func running() snapshot.Snapshot {
	lc := t0.Add(-time.Second)
	s := snapshot.Snapshot{Schema: 1, Time: t0, Host: "root@10.1.230.174", Root: "/data/eagle3/synth_100k",
		Connection: snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: &lc},
		Worker:     snapshot.Worker{State: "running", PID: 4242, Category: "B3_magicoder", Source: "worker.json"},
		Server: snapshot.Server{State: "ready", GenThroughput: 930.1, RunningReqs: 72, TokenUsage: 0.96, CacheHitRate: fptr(0.12), Source: "metrics",
			Throughput: []float64{math.NaN(), 700, 850, 910, math.NaN(), 930, 920, 930.1}},
		ETASeconds: fptr(9000),
	}
	names := []string{"B1_glaive", "B2_opencodeinstruct", "B3_magicoder", "B4_metamath", "B5_long_reasoning", "B6_sharegpt", "B7_ultrachat", "B8_wildchat", "B9_lmsys", "B10_code_feedback"}
	for i, n := range names {
		c := snapshot.Category{Name: n, Class: "SHORT", Target: 10000, State: snapshot.StatePending}
		if i%4 == 3 {
			c.Class = "LONG"
		}
		rates := make([]float64, 30)
		for k := range rates {
			rates[k] = math.NaN()
		}
		switch {
		case i < 2:
			c.Done, c.State = 10000, snapshot.StateDone
			if i == 0 {
				c.Done, c.State = 9998, snapshot.StateSkipped
			}
		case i == 2:
			c.Done, c.State, c.RatePerMin, c.ETASeconds, c.Errors = 4200, snapshot.StateRunning, 96.5, fptr(3600), 3
			for k := 10; k < 30; k++ {
				rates[k] = 80 + float64(k%7)*5
			}
			rates[20] = math.NaN() // a gap stays a gap
		}
		c.Rates = rates
		s.Categories = append(s.Categories, c)
	}
	return s
}

func teaSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }
