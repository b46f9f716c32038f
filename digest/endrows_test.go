package digest

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The tables of ends (runEndRows, scriptEndRows) and docs/REPORT.md's
// cannot drift: over a grid of witnesses every row is the first to hold
// for some of them (none is dead), and the ends the rows give are exactly
// the doc's and every End constant (endWords' keys).
func TestRunEndRowsGiveTheDocEnds(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/REPORT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "<!-- run ends:")
	table, _, ok2 := strings.Cut(table, "<!-- /run ends -->")
	if !ok || !ok2 {
		t.Fatal("docs/REPORT.md has no table of run ends")
	}
	var doc []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		doc = append(doc, m[1])
	}
	given := map[string]bool{}
	runHit := map[int]bool{}
	for _, line := range []string{"", parse.RunFinished, parse.RunStopped, parse.RunFailed, "exploded"} {
		for _, phase := range []string{"", parse.WorkerRunning, parse.WorkerWaitingServer, parse.WorkerDone, parse.WorkerFailed, parse.WorkerStopped} {
			for bits := range 1 << 6 {
				f := runEndFacts{noID: bits&1 != 0, ended: line != "", line: line, json: bits&2 != 0, phase: phase,
					age: time.Second, gone: bits&8 != 0, mark: bits&16 != 0, pid: 7, jsonError: "boom", lineCause: "SIGTERM"}
				if bits&4 != 0 {
					f.age = time.Hour
				}
				if bits&32 != 0 {
					f.ended = false
				}
				runHit[slices.IndexFunc(runEndRows, func(r endRow[runEndFacts]) bool { return r.when(f) })] = true
				given[firstEnd(runEndRows, f).end] = true
			}
		}
	}
	scriptHit := map[int]bool{}
	for _, state := range []string{parse.JudgedRunning, parse.JudgedStopped, parse.JudgedExited, parse.JudgedDied, parse.JudgedUnknown} {
		for _, exc := range []string{"", "KeyboardInterrupt", "ValueError: bad"} {
			for bits := range 1 << 5 {
				f := scriptEndFacts{state: state, byYou: bits&1 != 0, marked: bits&2 != 0, known: bits&4 != 0, logFresh: bits&8 != 0,
					fatal: bits&16 != 0, exc: exc, pid: 7, holds: "the script's log", since: "3s"}
				scriptHit[slices.IndexFunc(scriptEndRows, func(r endRow[scriptEndFacts]) bool { return r.when(f) })] = true
				given[firstEnd(scriptEndRows, f).end] = true
			}
		}
	}
	for i, r := range runEndRows {
		if !runHit[i] {
			t.Errorf("runEndRows[%d] (%s) is never the first row to hold", i, r.end)
		}
	}
	for i, r := range scriptEndRows {
		if !scriptHit[i] {
			t.Errorf("scriptEndRows[%d] (%s) is never the first row to hold", i, r.end)
		}
	}
	got, listed := slices.Sorted(maps.Keys(given)), slices.Sorted(slices.Values(doc))
	if !slices.Equal(got, listed) {
		t.Errorf("the rows give %q, docs/REPORT.md lists %q", got, doc)
	}
	if named := slices.Sorted(maps.Keys(endWords)); !slices.Equal(named, listed) {
		t.Errorf("the ends named %q, docs/REPORT.md lists %q", named, doc)
	}
}
