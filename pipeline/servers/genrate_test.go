package servers

import (
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

func opt(v float64) parse.Opt[float64] { return parse.Opt[float64]{V: v, OK: true} }

// SGLang counts generated tokens when a request finishes: while long
// requests generate, the counter stands still between polls and its delta
// says 0 tok/s. The scheduler's gauge is then the figure.
func TestGenThroughputFromTheGaugeWhileTheCounterStandsStill(t *testing.T) {
	t.Parallel()
	sv := &Set{}
	s := &srvWatch{st: serverState{probe: serverProbe{metrics: "ok"}}}
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	met := func(counter, gauge float64) parse.ServerMetrics {
		return parse.ServerMetrics{Dialect: parse.DialectSGLang, GenTokens: opt(counter), GenThroughput: opt(gauge), RunningReqs: opt(8)}
	}
	sv.serverView(s, met(1000, 1200), nil, t0, false)
	v := sv.serverView(s, met(1000, 1250), nil, t0.Add(2*time.Second), false)
	if v.GenThroughput != 1250 || v.State != snapshot.ServerBusy {
		t.Fatalf("counter still, gauge 1250: %+v", v)
	}
	v = sv.serverView(s, met(3000, 1250), nil, t0.Add(4*time.Second), false)
	if v.GenThroughput != 1000 {
		t.Fatalf("counter moved 2000 in 2 s: %+v", v)
	}
}

// SGLang's gen_throughput gauge keeps its last decode batch's figure when
// the server falls idle (after a kill): a first look at an idle server
// says 0 tok/s, not the night's last 480.
func TestIdleServersGaugeIsNotItsThroughput(t *testing.T) {
	t.Parallel()
	sv := &Set{}
	s := &srvWatch{st: serverState{probe: serverProbe{metrics: "ok"}}}
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	idle := parse.ServerMetrics{Dialect: parse.DialectSGLang, GenTokens: opt(90000), GenThroughput: opt(480), RunningReqs: opt(0), QueueReqs: opt(0)}
	if v := sv.serverView(s, idle, nil, t0, false); v.GenThroughput != 0 {
		t.Fatalf("an idle server's first look: %+v", v)
	}
	busy := &srvWatch{st: serverState{probe: serverProbe{metrics: "ok"}}}
	idle.RunningReqs = opt(6)
	if v := sv.serverView(busy, idle, nil, t0, false); v.GenThroughput != 480 {
		t.Fatalf("a busy server's first look is its gauge: %+v", v)
	}
}

// vLLM counts tokens every step: requests running and a counter that does
// not move for several polls is a hang, with its reason and an event.
func TestRunningRequestsWithoutTokensAreAHang(t *testing.T) {
	t.Parallel()
	tl := timeline.New(50, "")
	sv := &Set{tl: tl}
	s := &srvWatch{st: serverState{probe: serverProbe{metrics: "ok"}}}
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	met := parse.ServerMetrics{Dialect: parse.DialectVLLM, GenTokens: opt(5000), RunningReqs: opt(3)}
	var v snapshot.Server
	for i := 0; i <= hangLines; i++ {
		v = sv.serverView(s, met, nil, t0.Add(time.Duration(i)*2*time.Second), false)
		sv.serverEvents(s, v, t0.Add(time.Duration(i)*2*time.Second))
	}
	if v.State != snapshot.ServerHung || v.GenThroughput != 0 {
		t.Fatalf("server %+v", v)
	}
	found := false
	for _, e := range tl.Recent(50) {
		found = found || e.Kind == "server_hang"
	}
	if !found {
		t.Fatalf("no server_hang event: %+v", tl.Recent(50))
	}
}
