package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

func sampleLatency() *snapshot.Latency {
	return &snapshot.Latency{Scope: "window", WindowSeconds: 300,
		TTFT:  &snapshot.Percentiles{P50: 0.4, P90: 0.6, P99: 1.9, Count: 1210},
		ITL:   &snapshot.Percentiles{P50: 0.0178, P90: 0.0236, P99: 0.0249, Count: 402113},
		E2E:   &snapshot.Percentiles{P50: 18.3, P90: 37.1, P99: 39.7, Count: 1190},
		Queue: &snapshot.Percentiles{P50: 0.0917, P90: 0.2, P99: 0.47, Count: 1212}}
}

// panelServer is a host with two servers, one of them with 2 DP ranks,
// one whose /metrics failed this poll (STALE, its figures 12 s old) and
// one down; the slow DP rank is named.
func panelServer(f *fake) {
	sv := &f.snap.Server
	sv.Latency = sampleLatency()
	l, r := 3.02, 0.68
	sv.Spec = &snapshot.SpecDecode{AcceptLength: &l, AcceptRate: &r}
	sv.KVCacheDType = "fp8_e4m3"
	u := func(v float64) *float64 { return &v }
	age := 12.0
	sv.Rows = []snapshot.ReplicaRow{
		{Name: "127.0.0.1:30000 dp0", Server: "127.0.0.1:30000", State: snapshot.RowUp, Source: "metrics", GenThroughput: u(1500), RunningReqs: 40, QueueReqs: 5, TokenUsage: u(0.62)},
		{Name: "127.0.0.1:30000 dp1", Server: "127.0.0.1:30000", State: snapshot.RowUp, Source: "metrics", GenThroughput: u(400), RunningReqs: 24, TokenUsage: u(0.31), Slow: true},
		{Name: "127.0.0.1:30001", Server: "127.0.0.1:30001", State: snapshot.RowStale, Source: "metrics", GenThroughput: u(880), RunningReqs: 30, TokenUsage: u(0.55), AgeSeconds: &age},
		{Name: "127.0.0.1:30002", Server: "127.0.0.1:30002", State: snapshot.RowDown, Reason: "/metrics refused, log quiet 2m"},
	}
	sv.Imbalance = &snapshot.Imbalance{Replica: "127.0.0.1:30000 dp1", Reason: "127.0.0.1:30000 dp1: 400 tok/s with 24 running, 0 queued; the others' median 1500 tok/s"}
}

// Golden screens of the server panel, closed (a latency line and a
// summary) and opened with its key (percentiles and a row per replica with
// a STALE and a DOWN row and the slow one flagged), 80 and 160 columns.
func TestGoldenServerPanel(t *testing.T) {
	for _, open := range []bool{false, true} {
		for _, size := range [][2]int{{80, 24}, {80, 40}, {160, 50}} {
			name := "closed"
			if open {
				name = "open"
			}
			t.Run(name+"_"+itoa(size[0])+"x"+itoa(size[1]), func(t *testing.T) {
				f := newFake()
				f.snap = running()
				f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
				panelServer(f)
				m, _ := newModel(f, size[0], size[1], Config{PollEvery: 2 * time.Second, Plain: true})
				if open {
					m = step(m, press("s"))
				}
				got := screen(m)
				for _, l := range strings.Split(got, "\n") {
					if w := ansi.StringWidth(l); w > size[0] {
						t.Fatalf("line wider than the screen (%d > %d): %q", w, size[0], l)
					}
				}
				if n := strings.Count(got, "\n") + 1; n > size[1] {
					t.Fatalf("%d lines on a %d-line screen", n, size[1])
				}
				want := []string{"TTFT", "400ms"}
				if open && size[1] >= 40 {
					want = append(want, "dp1", "◀ slow", "STALE 12s", "DOWN", "imbalance", "p99", "fp8_e4m3", "accept length 3.02", "ITL 18ms/24ms/25ms"[:3])
				} else if !open {
					want = append(want, "4 replicas: 2 up, 1 STALE, 1 DOWN", "slow: 127.0.0.1:30000 dp1")
				}
				for _, s := range want {
					if !strings.Contains(got, s) {
						t.Errorf("no %q on the screen:\n%s", s, got)
					}
				}
				golden.RequireEqual(t, got) // testdata/TestGoldenServerPanel/NAME_WxH.golden; -update rewrites it
			})
		}
	}
}

// Opened on a short screen with the host's vitals and a reason line below
// it, the panel gives way: the screen keeps its height and the log its
// tabs.
func TestServerPanelOpenFitsTheScreen(t *testing.T) {
	for _, h := range []int{24, 30} {
		f := newFake()
		f.snap = running()
		f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
		panelServer(f)
		f.snap.Vitals = vitals8()
		f.snap.Server.State, f.snap.Server.Reason = snapshot.ServerUnhealthy, "1 of 3 not answering: 127.0.0.1:30002 down"
		m, _ := newModel(f, 80, h, Config{PollEvery: 2 * time.Second, Plain: true})
		m = step(m, press("s"))
		got := screen(m)
		if n := strings.Count(got, "\n") + 1; n > h || !strings.Contains(got, "1 worker log") || !strings.Contains(got, "s: close") {
			t.Errorf("height %d: %d lines:\n%s", h, n, got)
		}
	}
}
