package parse

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The target's table: the manifest's cap on the prompts' count, worker.json
// where the worker counted them itself, the prompts again once they grew
// after it started, the log's figure only when nothing else tells and a
// note wherever it disagrees.
func TestJudgeTarget(t *testing.T) {
	start := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		f      TargetFacts
		target int64
		source string
		note   string
	}{
		{"the old script's --max-samples", TargetFacts{Prompts: 10000, Log: 7000}, 10000, TargetPrompts, "the worker log says 7000 prompts"},
		{"the manifest's cap", TargetFacts{Prompts: 10000, MaxSamples: 7000, Log: 7000}, 7000, TargetManifest, ""},
		{"the worker's own count (duplicate ids)", TargetFacts{Prompts: 105, PromptsAt: start.Add(-time.Hour), Worker: 100, WorkerRead: start}, 100, TargetWorker, ""},
		{"prompts appended after the worker read them", TargetFacts{Prompts: 40, PromptsAt: start.Add(time.Hour), Worker: 20, WorkerRead: start}, 40, TargetPrompts, ""},
		{"appended, under the manifest's cap", TargetFacts{Prompts: 40, PromptsAt: start.Add(time.Hour), MaxSamples: 20, Worker: 20, WorkerRead: start}, 20, TargetWorker, ""},
		{"appended in the second the worker started (an mtime in whole seconds)", TargetFacts{Prompts: 40, PromptsAt: start, Worker: 20, WorkerRead: start.Add(300 * time.Millisecond)}, 40, TargetPrompts, ""},
		{"no prompts file", TargetFacts{Log: 300}, 300, TargetLog, ""},
		{"nothing", TargetFacts{}, 0, TargetPrompts, ""},
	} {
		target, source, note := JudgeTarget(tc.f)
		if target != tc.target || source != tc.source || !strings.HasPrefix(note, tc.note) || tc.note == "" && note != "" {
			t.Errorf("%s: %d from %s (%q), want %d from %s (%q…)", tc.name, target, source, note, tc.target, tc.source, tc.note)
		}
	}
}

// The category's table: done only when nothing is left (worker.json's
// "done" stands unless prompts were appended since), running only with a
// live worker on it, partial for records nobody works on.
func TestJudgeCategory(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    CategoryFacts
		want string
	}{
		{"done by worker.json", CategoryFacts{Done: 20, Target: 20, JSONState: CatDone}, CatDone},
		{"worker.json done, prompts appended", CategoryFacts{Done: 20, Target: 40, JSONState: CatDone, TargetRaised: true}, JudgedPartial},
		{"budget spent, nobody on it", CategoryFacts{Done: 7000, Target: 10000, BudgetReached: true, JSONState: CatSkipped}, CatDone},
		{"a writer on it", CategoryFacts{Done: 30, Target: 100, Current: true, Worker: JudgedRunning}, CatRunning},
		{"records, nobody on it", CategoryFacts{Done: 9998, Target: 10000, Worker: JudgedNone}, JudgedPartial},
		{"died on it", CategoryFacts{Done: 5, Target: 10, Current: true, Worker: JudgedDied}, JudgedDiedOn},
		{"stopped by you", CategoryFacts{Done: 5, Target: 10, Current: true, Worker: JudgedStopped, ByYou: true}, CatStopped},
		{"never counted", CategoryFacts{Unread: true, Current: true, Worker: JudgedRunning}, JudgedUnread},
		{"nothing yet", CategoryFacts{Target: 10}, CatPending},
	} {
		if got, _ := JudgeCategory(tc.f); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if Left(7000, 10000, CatDone) != 0 || Left(20, 40, JudgedPartial) != 20 || Left(50, 40, CatRunning) != 0 {
		t.Error("Left")
	}
}

// The category's state table (categoryRows) and docs/STATUS.md's cannot
// drift: over a grid of witnesses every row is the first to hold for some
// of them (none is dead), and the states the rows give, with the stall
// judged after them, are exactly the doc's.
func TestCategoryRowsGiveTheDocStates(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/STATUS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(data), "<!-- category states:")
	table, _, _ = strings.Cut(table, "<!-- /category states -->")
	var doc []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		doc = append(doc, m[1])
	}
	hit := map[int]bool{}
	given := map[string]bool{JudgedStalled: true}
	for _, js := range []string{"", CatSkipped, CatDone, CatFailed, CatStopped} {
		for _, wk := range []string{"", JudgedRunning, JudgedDied, JudgedStopped} {
			for bits := range 1 << 6 {
				for _, done := range []int64{0, 5, 10} {
					f := CategoryFacts{Done: done, Target: 10, TargetRaised: bits&1 != 0, BudgetReached: bits&2 != 0, JSONState: js,
						LogSkipped: bits&4 != 0, Unread: bits&8 != 0, Current: bits&16 != 0, Worker: wk, ByYou: bits&32 != 0}
					hit[slices.IndexFunc(categoryRows, func(r categoryRow) bool { return r.when(f) })] = true
					state, _ := JudgeCategory(f)
					given[state] = true
				}
			}
		}
	}
	for i, r := range categoryRows {
		if !hit[i] {
			t.Errorf("categoryRows[%d] (%s) is never the first row to hold", i, r.state)
		}
	}
	if got := slices.Sorted(maps.Keys(given)); !slices.Equal(got, slices.Sorted(slices.Values(doc))) {
		t.Errorf("the rows give %q, docs/STATUS.md lists %q", got, doc)
	}
}
