package parse

import (
	"fmt"
	"time"
)

// A category's state, its target and its stall are judged here, once, from
// the host's evidence: the dashboard, status, --follow and the fleet
// (pipeline, on the laptop) and the report (digest, on the host) hand the
// same witnesses to the same functions and so say the same thing.

// Where a category's target comes from (TargetFacts, JudgeTarget).
const (
	TargetManifest = "manifest" // pipeline.toml's max_samples, below the prompts' count
	TargetPrompts  = "prompts"  // prompts.jsonl's lines
	TargetWorker   = WorkerStateFile
	TargetLog      = "log" // the worker log's "NAME: N prompts": only when nothing else tells
)

// TargetFacts are the witnesses of a category's target.
type TargetFacts struct {
	Prompts    int64     // prompts.jsonl's lines (0: none, or not read)
	PromptsAt  time.Time // prompts.jsonl's mtime (zero: unknown)
	MaxSamples int       // the manifest's cap (0: none)
	Worker     int       // worker.json's target (0: none)
	WorkerRead time.Time // when that worker started (it read the prompts since)
	Log        int       // the worker log's "N prompts" (0: none)
}

// JudgeTarget is a category's target and its source: the manifest's cap on
// the prompts' count, else the count; worker.json's target where the
// worker counted the prompts itself (unique ids), unless prompts.jsonl has
// grown since that worker started (prompts appended after it read them
// raise the target: never a false done); the log's figure only when
// nothing else tells. note says where the log disagrees with the target
// (the old script's --max-samples, or a prompts file since changed).
func JudgeTarget(f TargetFacts) (target int64, source, note string) {
	target, source = f.Prompts, TargetPrompts
	if f.MaxSamples > 0 && int64(f.MaxSamples) < target {
		target, source = int64(f.MaxSamples), TargetManifest
	}
	// a host's mtime may be whole seconds (stat -c %Y): a file changed in the
	// second the worker started counts as changed after it
	grown := target > int64(f.Worker) && !f.PromptsAt.IsZero() && !f.PromptsAt.Before(f.WorkerRead.Truncate(time.Second))
	switch {
	case f.Worker > 0 && !grown:
		target, source = int64(f.Worker), TargetWorker
	case target > 0:
	case f.Log > 0:
		target, source = int64(f.Log), TargetLog
	}
	if f.Log > 0 && int64(f.Log) != target {
		note = fmt.Sprintf("the worker log says %d prompts; the target is %d, from %s", f.Log, target, targetWords[source])
	}
	return target, source, note
}

var targetWords = map[string]string{TargetManifest: "pipeline.toml's max_samples", TargetPrompts: "prompts.jsonl's lines",
	TargetWorker: "worker.json", TargetLog: "the log"}

// The category states every view shows (snapshot.CategoryState's strings;
// the worker.json words CatPending … mean the same).
const (
	JudgedPartial = "partial" // some records, and no worker on it
	JudgedStalled = "stalled" // worked on, and no new records for the stall limit
	JudgedDiedOn  = "died"    // the worker died while on it
	JudgedUnread  = "unknown" // never counted
)

// CategoryFacts are the witnesses of a category's state.
type CategoryFacts struct {
	Done, Target  int64
	TargetRaised  bool   // the target is above worker.json's (prompts appended since it read them)
	BudgetReached bool   // its completion tokens reached its budget
	JSONState     string // worker.json's word for it ("": none)
	LogSkipped    bool   // the worker log says it was skipped as done, and there is no worker.json
	Unread        bool   // never counted
	Current       bool   // the worker's category (worker.json's, the log's last header, the file a writer holds)
	Worker        string // the worker's state (JudgeWorker's)
	WorkerReason  string
	ByYou         bool // synthwatch's kill stopped the worker
}

// categoryRow is one row of a category's state table: when it holds, the
// category is in state, for the reason its words give.
type categoryRow struct {
	when  func(f CategoryFacts) bool
	state string
	words func(f CategoryFacts) string
}

// categoryRows are the state table of a category, first match wins: an
// ending worker.json or the records tell first, then what the worker does
// or did on it. Stalled is not a row: it is judged after, on the running
// ones (Stalled).
var categoryRows = []categoryRow{
	{CategoryFacts.done, CatDone, nothing}, // "skipped" is a later run finding it done: one final state
	{func(f CategoryFacts) bool { return f.JSONState == CatFailed }, CatFailed, nothing},
	{func(f CategoryFacts) bool { return f.Unread }, JudgedUnread, nothing},
	{CategoryFacts.live, CatRunning, nothing},
	{func(f CategoryFacts) bool { return f.Current && f.Worker == JudgedDied }, JudgedDiedOn, func(f CategoryFacts) string {
		if f.WorkerReason != "" {
			return "the worker died on it: " + f.WorkerReason
		}
		return "the worker died on it"
	}},
	{func(f CategoryFacts) bool { return f.stopped() && f.Current && f.ByYou }, CatStopped, func(CategoryFacts) string { return "stopped by you" }},
	{CategoryFacts.stopped, CatStopped, func(CategoryFacts) string { return "the worker was stopped on it" }},
	{func(f CategoryFacts) bool { return f.Done > 0 }, JudgedPartial, nothing},
	{func(CategoryFacts) bool { return true }, CatPending, nothing},
}

// JudgeCategory is a category's state, before its stall (Stalled, on the
// live ones), and the reason every view shows: categoryRows' first row
// that holds.
func JudgeCategory(f CategoryFacts) (state, reason string) {
	for _, r := range categoryRows {
		if r.when(f) {
			return r.state, r.words(f)
		}
	}
	panic("a state table without its last row")
}

func (f CategoryFacts) live() bool { return f.Current && f.Worker == JudgedRunning }

// done: complete by any witness: worker.json (unless prompts were appended
// since), the target reached, the budget spent (by a worker no longer on
// it), or the log's skip line with no worker.json.
func (f CategoryFacts) done() bool {
	jsonDone := (f.JSONState == CatSkipped || f.JSONState == CatDone) && !f.TargetRaised
	return jsonDone || f.Target > 0 && f.Done >= f.Target || f.BudgetReached && !f.live() || f.JSONState == "" && f.LogSkipped
}

// stopped: the worker was stopped while on it, or worker.json says so.
func (f CategoryFacts) stopped() bool {
	return f.Current && f.Worker == JudgedStopped || f.JSONState == CatStopped
}

func nothing(CategoryFacts) string { return "" }

// FrozenReason is a running category's reason while its worker's process
// is stopped (SIGSTOP, Ctrl-Z): no rate and no ETA until it is continued.
const FrozenReason = "the worker's process is stopped (SIGSTOP or Ctrl-Z): nothing is written until it is continued"

// ClaimsRate says whether a category in state may show a rate and an ETA:
// only one worked on and not stalled. One nobody works on, or stalled,
// has work left and no time to it; an old log line's rate is none.
func ClaimsRate(state string) bool { return state == CatRunning }

// QuietSince is when a worked-on category last showed life: its last
// record (the file's growth, or its mtime at a first read), or when it
// became current if that is later; a weak start (only the log's last line)
// counts when the file never grew. Zero: no witness, no stall claimed.
func QuietSince(lastGrowth, currentSince time.Time, weak bool) time.Time {
	if currentSince.After(lastGrowth) && (!weak || lastGrowth.IsZero()) {
		return currentSince
	}
	return lastGrowth
}

// Stalled says a running category quiet since since is stalled at now
// under limit, and for how long it has been quiet.
func Stalled(now, since time.Time, limit time.Duration) (quiet time.Duration, stalled bool) {
	if since.IsZero() {
		return 0, false
	}
	quiet = now.Sub(since)
	return quiet, quiet > limit
}

// StallReason is a stalled category's reason, in every view's words.
func StallReason(quiet time.Duration, errors int64) string {
	r := "no new records for " + FormatDuration(quiet)
	if errors > 0 {
		r += fmt.Sprintf(", %d errors", errors)
	}
	return r
}

// Left is what a category still has to do: none once it is done (its
// budget spent, or the worker found it done), else the target less the
// records, never below 0.
func Left(done, target int64, state string) int64 {
	if state == CatDone || state == CatSkipped {
		return 0
	}
	return max(target-done, 0)
}
