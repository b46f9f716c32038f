package servers

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// vLLM's acceptance is its counters' gain over the window; SGLang's is
// its gauges'.
func TestSpecDecodeWindow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	o := func(v float64) parse.Opt[float64] { return parse.Opt[float64]{V: v, OK: true} }
	lw := &latWindow{}
	lw.note(parse.ServerMetrics{SpecAccepted: o(1000), SpecDraftTokens: o(3000), SpecDrafts: o(1000)}, t0)
	lw.note(parse.ServerMetrics{SpecAccepted: o(1210), SpecDraftTokens: o(3300), SpecDrafts: o(1100)}, t0.Add(2*time.Second))
	sp := specOf([]*latWindow{lw})
	if sp == nil || *sp.AcceptRate != 0.7 || *sp.AcceptLength != 3.1 {
		t.Fatalf("vllm %+v", sp)
	}
	sg := &latWindow{}
	sg.note(parse.ServerMetrics{SpecAcceptLength: o(2.5), SpecAcceptRate: o(0.5)}, t0)
	if sp := specOf([]*latWindow{sg}); sp == nil || *sp.AcceptLength != 2.5 || *sp.AcceptRate != 0.5 {
		t.Fatalf("sglang %+v", sp)
	}
	off := &latWindow{}
	off.note(parse.ServerMetrics{SpecAcceptLength: o(0), SpecAcceptRate: o(0)}, t0) // no speculative decoding
	if sp := specOf([]*latWindow{off}); sp != nil {
		t.Fatalf("spec decode off: %+v", sp)
	}
}

// A replica with nothing to do while the others queue is the imbalance;
// replicas that are not up are never judged.
func TestImbalanceIdleWhileOthersQueue(t *testing.T) {
	t.Parallel()
	g := func(v float64) *float64 { return &v }
	rows := []snapshot.ReplicaRow{
		{Name: "a", State: snapshot.RowUp, GenThroughput: g(900), RunningReqs: 64, QueueReqs: 12},
		{Name: "b", State: snapshot.RowUp, GenThroughput: g(0)},
		{Name: "c", State: snapshot.RowStale, GenThroughput: g(10), RunningReqs: 64},
	}
	im := imbalance(rows)
	if im == nil || im.Replica != "b" || !strings.Contains(im.Reason, "idle while others queue (a 12)") {
		t.Fatalf("%+v", im)
	}
	rows[1].State = snapshot.RowDown
	if im := imbalance(rows); im != nil {
		t.Fatalf("one replica up: %+v", im)
	}
}

// A replica read from its log alone is STALE with the figures' age when the
// log's last batch line is old (figures_stale), never an up row with old
// figures; the same server with fresh log figures is up.
func TestReplicaRowFromStaleLogFigures(t *testing.T) {
	t.Parallel()
	fs := &figureState{rows: map[string]rowMemo{}}
	age := 300.0
	v := snapshot.Server{URL: "http://127.0.0.1:30000", State: snapshot.ServerReady, Source: "log", GenThroughput: 930, RunningReqs: 72, FiguresStale: true, FiguresAgeSeconds: &age}
	rd := Read{metErr: errors.New("/metrics refused")}
	rows := fs.rowsOf("srv", v, rd, nil, time.Now())
	if len(rows) != 1 || rows[0].State != snapshot.RowStale || rows[0].AgeSeconds == nil || *rows[0].AgeSeconds != 300 {
		t.Fatalf("stale log figures: %+v", rows)
	}
	if imb := imbalance(append(rows, snapshot.ReplicaRow{Name: "b", State: snapshot.RowUp, RunningReqs: 1})); imb != nil {
		t.Errorf("a stale row takes part in the imbalance check: %+v", imb)
	}
	v.FiguresStale, v.FiguresAgeSeconds = false, nil
	if rows = fs.rowsOf("srv", v, rd, nil, time.Now()); len(rows) != 1 || rows[0].State != snapshot.RowUp {
		t.Fatalf("fresh log figures: %+v", rows)
	}
}
