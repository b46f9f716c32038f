package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// TestSnapshotOnlyProjects runs a night through a real server (sim on a
// loopback port) and real files: records flow, the category stalls and
// flows again, the server goes down and comes back, the worker finishes.
// After every poll the Snapshot is projected twice: both equal the poll's
// own, and projecting changed nothing the parts or the timeline hold.
func TestSnapshotOnlyProjects(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, pid := runningRoot(t, c)
	srv := sim.New(sim.Options{})
	must(t, srv.Start("127.0.0.1:0"))
	t.Cleanup(srv.Close)
	w := localWatcher(t, root, c, Options{ServerURL: srv.URL(), StallAfter: 3 * time.Minute})
	raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
	step := func(what string, d time.Duration) Snapshot {
		t.Helper()
		c.advance(d)
		s := poll(w)
		projectsOnly(t, w, s, what)
		return s
	}
	next := 100
	grow := func(n int) { appendTo(t, raw, records("B2", next, n)); next += n }

	s := step("start", 0)
	if s.Worker.State != WorkerRunning || s.Server.Metrics != "ok" {
		t.Fatalf("start: worker %+v server %+v", s.Worker, s.Server)
	}
	for i := 0; i < 3; i++ {
		grow(30)
		s = step("records flow", time.Minute)
	}
	for i := 0; i < 7 && catByName(t, s, "B2").State != StateStalled; i++ {
		s = step("quiet", time.Minute)
	}
	if catByName(t, s, "B2").State != StateStalled || s.Worker.State != WorkerStalled {
		t.Fatalf("no stall: worker %+v B2 %+v", s.Worker, catByName(t, s, "B2"))
	}
	grow(5)
	if s = step("flows again", time.Minute); catByName(t, s, "B2").State != StateRunning {
		t.Fatalf("the stall did not end: %+v", catByName(t, s, "B2"))
	}

	addr := srv.Addr()
	srv.Close()
	for i := 0; i < 2; i++ {
		s = step("server down", time.Minute)
	}
	if s.Server.Metrics != "refused" || s.Server.State == ServerReady || s.Server.State == ServerBusy {
		t.Fatalf("server down: %+v", s.Server)
	}
	back := sim.New(sim.Options{})
	must(t, back.Start(addr))
	t.Cleanup(back.Close)
	grow(10)
	if s = step("server back", time.Minute); s.Server.Metrics != "ok" {
		t.Fatalf("server back: %+v", s.Server)
	}

	grow(1000 - next)
	writeWorkerJSON(t, root, parse.WorkerState{PID: pid, State: parse.WorkerDone, Category: "B2", UpdatedAt: c.now().Add(time.Minute),
		Categories: []parse.CategoryState{
			{Name: "B1", Class: "SHORT", Done: 20, Target: 20, State: parse.CatSkipped},
			{Name: "B2", Class: "LONG", Done: 1000, Target: 1000, State: parse.CatDone, CompletionTokens: 200000},
		}})
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	waitZombie(t, pid)
	s = step("finished", time.Minute)
	s = step("after", time.Minute)
	if s.Worker.State != WorkerExited || catByName(t, s, "B2").State != StateDone {
		t.Fatalf("finished: worker %+v B2 %+v", s.Worker, catByName(t, s, "B2"))
	}
	for _, k := range []string{"stall_start", "stall_end", "server_down", "server_up", "worker_exited", "category_done", "pipeline_done"} {
		if len(kinds(w.timeline.Recent(500), k)) == 0 {
			t.Errorf("the night never had %s: %+v", k, w.timeline.Recent(500))
		}
	}
}

// projectsOnly projects w's Snapshot twice after a poll that returned s:
// each equals s, and the parts and the timeline are as the poll left them.
func projectsOnly(t *testing.T, w *Watcher, s Snapshot, what string) {
	t.Helper()
	before := partsText(w)
	a := w.project()
	b := w.project()
	if got, want := stateText(a), stateText(s); got != want {
		t.Fatalf("%s: the projection is not the poll's snapshot: %s", what, firstDiff(want, got))
	}
	if got, want := stateText(b), stateText(a); got != want {
		t.Fatalf("%s: a second projection differs: %s", what, firstDiff(want, got))
	}
	if after := partsText(w); after != before {
		t.Fatalf("%s: projecting changed the watcher's parts:\n%s", what, firstDiff(before, after))
	}
}

// partsText is everything a poll folds into: each part, and the timeline.
func partsText(w *Watcher) string {
	return stateText(struct {
		cnt   counts
		sv    serverSet
		live  liveness
		log   logs
		ev    events
		vit   vitals
		base  baselineState
		polls int
		tl    []Event
	}{w.cnt, w.sv, w.live, w.log, w.ev, w.vit, w.base, w.polls, w.timeline.Recent(1 << 30)})
}

func waitZombie(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not end: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] { // with the lines before it, which name the field
			return fmt.Sprintf("line %d:\n%s\n- %s\n+ %s", i, strings.Join(al[max(0, i-8):i], "\n"), al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(al), len(bl))
}

// stateText writes v out whole, following pointers (each once) and
// unexported fields, maps in key order, NaN as NaN, an instant as its
// clock readings: two values with the same text hold the same state.
func stateText(v any) string { return valueText(reflect.ValueOf(v)) }

func valueText(v reflect.Value) string {
	var b strings.Builder
	d := dumper{b: &b, seen: map[string]bool{}}
	d.dump(v, 0)
	return b.String()
}

type dumper struct {
	b    *strings.Builder
	seen map[string]bool
}

var timeType = reflect.TypeOf(time.Time{})

func (d dumper) line(depth int, s string) {
	d.b.WriteString(strings.Repeat(" ", depth) + s + "\n")
}

func (d dumper) dump(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Invalid:
		d.line(depth, "<nil>")
	case reflect.Pointer:
		if v.IsNil() {
			d.line(depth, "nil")
			return
		}
		key := fmt.Sprintf("%s@%x", v.Type(), v.Pointer())
		if d.seen[key] {
			d.line(depth, "(seen "+v.Type().String()+")")
			return
		}
		d.seen[key] = true
		d.dump(v.Elem(), depth)
	case reflect.Interface:
		if v.IsNil() {
			d.line(depth, "nil")
			return
		}
		d.line(depth, v.Elem().Type().String())
		d.dump(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == timeType { // wall and monotonic readings; its zone is no state of ours
			d.line(depth, fmt.Sprintf("time %d %d", v.Field(0).Uint(), v.Field(1).Int()))
			return
		}
		for i := range v.NumField() {
			d.line(depth, v.Type().Field(i).Name+":")
			d.dump(v.Field(i), depth+1)
		}
	case reflect.Map:
		keys := v.MapKeys()
		text := make([]string, len(keys))
		for i, k := range keys {
			text[i] = valueText(k)
		}
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return text[idx[a]] < text[idx[b]] })
		d.line(depth, fmt.Sprintf("map len %d", len(keys)))
		for _, i := range idx {
			d.line(depth, "key "+strings.TrimSpace(text[i]))
			d.dump(v.MapIndex(keys[i]), depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			d.line(depth, "nil slice")
			return
		}
		d.line(depth, fmt.Sprintf("len %d", v.Len()))
		for i := range v.Len() {
			d.dump(v.Index(i), depth+1)
		}
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		d.line(depth, v.Type().String()) // behaviour, not state
	case reflect.Bool:
		d.line(depth, fmt.Sprint(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.line(depth, fmt.Sprint(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		d.line(depth, fmt.Sprint(v.Uint()))
	case reflect.Float32, reflect.Float64:
		d.line(depth, fmt.Sprint(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		d.line(depth, fmt.Sprint(v.Complex()))
	case reflect.String:
		d.line(depth, fmt.Sprintf("%q", v.String()))
	}
}
