package parse

import (
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
