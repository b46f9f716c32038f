package parse

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The worker's state table (workerRows) and docs/STATUS.md's cannot
// drift: over a grid of witnesses every row is the first to hold for some
// of them (none is dead), every end is given with its reason, and the
// states the rows give, with the stall judged after them, are exactly the
// doc's.
func TestWorkerRowsGiveTheDocStates(t *testing.T) {
	t.Parallel()
	doc := docTable(t, "../docs/STATUS.md", "worker states")
	hit := map[int]bool{}
	given := map[string]bool{JudgedStalled: true}
	phases := []string{"", WorkerStarting, WorkerWaitingServer, WorkerRunning, WorkerStopping, WorkerDone, WorkerFailed, WorkerStopped}
	for _, phase := range phases {
		for bits := range 1 << 8 {
			f := WorkerFacts{Known: bits&1 != 0, Alive: bits&2 != 0, Phase: phase, Finished: bits&4 != 0, Killed: bits&8 != 0, Ran: bits&16 != 0}
			if bits&32 != 0 {
				f.PID = 7
			}
			if bits&64 != 0 {
				f.JSONError = "boom"
			}
			if bits&128 != 0 {
				f.Failed = []string{"D_dir"}
			}
			hit[slices.IndexFunc(workerRows, func(r workerRow) bool { return r.when(f) })] = true
			state, reason, _ := JudgeWorker(f)
			given[state] = true
			if (state == JudgedDied || state == JudgedStopped || state == JudgedExited || state == JudgedUnknown) && reason == "" {
				t.Errorf("%+v: %s without a reason", f, state)
			}
		}
	}
	for i, r := range workerRows {
		if !hit[i] {
			t.Errorf("workerRows[%d] (%s) is never the first row to hold", i, r.state)
		}
	}
	if got := slices.Sorted(maps.Keys(given)); !slices.Equal(got, slices.Sorted(slices.Values(doc))) {
		t.Errorf("the rows give %q, docs/STATUS.md lists %q", got, doc)
	}
}

// docTable is the first column of a doc's table between "<!-- name" and
// "<!-- /name -->", in its order.
func docTable(t *testing.T, path, name string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "<!-- "+name)
	table, _, ok2 := strings.Cut(table, "<!-- /"+name+" -->")
	if !ok || !ok2 {
		t.Fatalf("%s has no %s table", path, name)
	}
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		rows = append(rows, m[1])
	}
	return rows
}
