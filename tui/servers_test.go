package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

func bp(b bool) *bool { return &b }
func np(n int) *int   { return &n }

// Golden screens of the server panel with several servers: two TP4
// servers on one host, one of them down; and SGLang's router with one
// replica its health checks have dropped.
func TestGoldenServerViews(t *testing.T) {
	hit := 0.41
	two := func(f *fake) {
		a := snapshot.Server{Role: snapshot.RoleServer, Name: "127.0.0.1:30000", URL: "http://127.0.0.1:30000", State: snapshot.ServerBusy,
			GenThroughput: 930, RunningReqs: 72, TokenUsage: 0.96, CacheHitRate: &hit, Source: "metrics"}
		b := snapshot.Server{Role: snapshot.RoleServer, Name: "127.0.0.1:30001", URL: "http://127.0.0.1:30001", State: snapshot.ServerDown,
			Reason: "/metrics refused, log quiet 2m, worker waiting for /health"}
		f.snap.Servers = []snapshot.Server{a, b}
		f.snap.Server = snapshot.Server{Role: "total", State: snapshot.ServerUnhealthy, GenThroughput: 930, RunningReqs: 72, TokenUsage: 0.96,
			CacheHitRate: &hit, Source: "metrics", Reason: "1 of 2 not answering: 127.0.0.1:30001 down", Throughput: f.snap.Server.Throughput}
	}
	router := func(f *fake) {
		r := snapshot.Server{Role: snapshot.RoleRouter, Name: "127.0.0.1:30000", URL: "http://127.0.0.1:30000", State: snapshot.ServerReady,
			Replicas: 2, HealthyReplicas: 1, RunningReqs: 37, Source: "router", Metrics: "ok"}
		up := snapshot.Server{Role: snapshot.RoleReplica, Name: "127.0.0.1:31000", Via: r.URL, State: snapshot.ServerBusy, GenThroughput: 1210,
			RunningReqs: 37, QueueReqs: 2, TokenUsage: 0.71, Source: "metrics", RouterHealthy: bp(true), RouterLoad: np(37)}
		down := snapshot.Server{Role: snapshot.RoleReplica, Name: "127.0.0.1:31001", Via: r.URL, State: snapshot.ServerDown,
			Reason: "/metrics refused, no server log", RouterHealthy: bp(false), RouterLoad: np(0)}
		f.snap.Servers = []snapshot.Server{r, up, down}
		f.snap.Server = snapshot.Server{Role: "total", State: snapshot.ServerUnhealthy, GenThroughput: 1210, RunningReqs: 37, QueueReqs: 2,
			TokenUsage: 0.71, Source: "metrics", Reason: "1 of 2 not answering: 127.0.0.1:31001 down", Throughput: f.snap.Server.Throughput}
	}
	for name, mut := range map[string]func(*fake){"two_servers": two, "router_replica_down": router} {
		for _, size := range [][2]int{{80, 24}, {120, 40}} {
			t.Run(name+"_"+itoa(size[0])+"x"+itoa(size[1]), func(t *testing.T) {
				f := newFake()
				f.snap = running()
				f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
				mut(f)
				m, _ := newModel(f, size[0], size[1], Config{PollEvery: 2 * time.Second, Plain: true})
				got := screen(m)
				for _, l := range strings.Split(got, "\n") {
					if w := ansi.StringWidth(l); w > size[0] {
						t.Fatalf("line wider than the screen (%d > %d): %q", w, size[0], l)
					}
				}
				for _, sv := range f.snap.Servers {
					if !strings.Contains(got, sv.Name) {
						t.Errorf("%s has no line", sv.Name)
					}
				}
				golden.RequireEqual(t, got) // testdata/TestGoldenServerViews/NAME_WxH.golden; -update rewrites it
			})
		}
	}
}

// Golden screens of the two endings issue 39 names, with the Server as
// the pipeline judges it (pipeline/testdata/TestGoldenServerEndings): an
// idle server shows its last batch with its time, not as current figures;
// a vLLM crash that uvicorn's stop followed is CRASHED with its cause.
func TestGoldenServerEndings(t *testing.T) {
	at := time.Date(2026, 11, 29, 2, 59, 55, 0, time.UTC)
	idle := snapshot.Server{State: snapshot.ServerReady, Source: "log", FiguresStale: true, FiguresAgeSeconds: fp(27),
		LastBatch: &snapshot.LastBatch{At: &at, AgeSeconds: 27, GenThroughput: 930, RunningReqs: 24, TokenUsage: 0.3}}
	crash := snapshot.Server{State: snapshot.ServerCrashed, Reason: "/metrics refused; last log record is a crash",
		LastCrash: "Worker proc VllmWorker-0 died unexpectedly, shutting down executor.", LastCrashAt: &at}
	for name, sv := range map[string]snapshot.Server{"idle_last_batch": idle, "crash_then_stop": crash} {
		t.Run(name, func(t *testing.T) {
			f := newFake()
			f.snap = running()
			f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
			sv.Throughput = f.snap.Server.Throughput
			f.snap.Server = sv
			m, _ := newModel(f, 100, 30, Config{PollEvery: 2 * time.Second, Plain: true})
			got := screen(m)
			want := map[string]string{"idle_last_batch": "idle · last batch 02:59: 930 tok/s", "crash_then_stop": "last crash: Worker proc VllmWorker-0 died"}[name]
			if !strings.Contains(got, want) || strings.Contains(got, "stopped") || name == "idle_last_batch" && strings.Contains(got, "gen 930") {
				t.Fatalf("screen:\n%s", got)
			}
			golden.RequireEqual(t, got) // testdata/TestGoldenServerEndings/NAME.golden; -update rewrites it
		})
	}
}
