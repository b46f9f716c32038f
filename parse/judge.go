package parse

import (
	"fmt"
	"strings"
)

// The worker's states as a person would call them, judged from what the
// host tells (snapshot.WorkerState's strings; stalled is judged later,
// from the categories).
const (
	JudgedRunning = "running"
	JudgedStopped = "stopped"
	JudgedExited  = "exited"
	JudgedDied    = "died"
	JudgedNone    = "none"
	JudgedUnknown = "unknown"
)

// WorkerFacts are the witnesses of a worker's state, for JudgeWorker.
type WorkerFacts struct {
	Known     bool   // false: the process table could not be read
	Alive     bool   // a live process: worker.json's pid, or a writer found
	Phase     string // worker.json's state, "" without one
	JSONError string // worker.json's error
	Finished  bool   // the log ends with "All categories finished."
	Killed    bool   // synthwatch's kill stopped this pid (its note or its mark)
	Ran       bool   // something ran here: worker.json, a log, a pid seen
	PID       int
	Failed    []string // worker.json's categories it could not do
}

// workerRow is one row of the worker's state table: when it holds, the
// worker is in state, for the reason its words give; byYou says
// synthwatch's kill ended it.
type workerRow struct {
	when  func(f WorkerFacts) bool
	state string
	words func(f WorkerFacts) string
	byYou bool
}

// workerRows are the worker's state table (docs/STATUS.md's), first match
// wins: the process table first (unread, or a live process), then our kill
// (unless worker.json says it was done), then worker.json's last word or
// the log's, then a run that left no word. Stalled is not a row: it is
// judged after, from the categories.
var workerRows = []workerRow{
	{func(f WorkerFacts) bool { return !f.Known }, JudgedUnknown, say("the host's /proc could not be read"), false},
	{func(f WorkerFacts) bool { return f.Alive }, JudgedRunning, say(""), false},
	{func(f WorkerFacts) bool { return f.Killed && f.Phase != WorkerDone }, JudgedStopped,
		func(f WorkerFacts) string { return fmt.Sprintf("pid %d stopped by synthwatch kill", f.PID) }, true},
	{phaseIs(WorkerDone), JudgedExited, func(f WorkerFacts) string { return doneWords(f.Failed) }, false},
	{func(f WorkerFacts) bool { return f.Phase == "" && f.Finished }, JudgedExited, say("the log says all categories finished"), false},
	{phaseIs(WorkerStopped), JudgedStopped, say("ended on a stop signal (not from this synthwatch)"), false},
	{phaseIs(WorkerFailed), JudgedDied, func(f WorkerFacts) string { return withCause("worker.json says failed", f.JSONError) }, false},
	{func(f WorkerFacts) bool { return f.Phase != "" }, JudgedDied,
		func(f WorkerFacts) string {
			return fmt.Sprintf("pid %d is gone while worker.json says %s", f.PID, f.Phase)
		}, false},
	{func(f WorkerFacts) bool { return f.Ran && f.PID > 0 }, JudgedDied,
		func(f WorkerFacts) string {
			return fmt.Sprintf("pid %d is gone: not stopped by synthwatch, and the log does not say finished", f.PID)
		}, false},
	{func(f WorkerFacts) bool { return f.Ran }, JudgedDied, say("no process writes the worker log or the category files, and the log does not say finished"), false},
	{func(WorkerFacts) bool { return true }, JudgedNone, say(""), false},
}

// JudgeWorker is the worker's state, one for the dashboard, status and the
// report, so that they call one end alike (Judged*): workerRows' first row
// that holds.
func JudgeWorker(f WorkerFacts) (state, reason string, byYou bool) {
	for _, r := range workerRows {
		if r.when(f) {
			return r.state, r.words(f), r.byYou
		}
	}
	panic("a state table without its last row")
}

func phaseIs(p string) func(WorkerFacts) bool {
	return func(f WorkerFacts) bool { return f.Phase == p }
}

func say(words string) func(WorkerFacts) string { return func(WorkerFacts) string { return words } }

// doneWords: a worker that went through every category, naming those it
// could not do.
func doneWords(failed []string) string {
	if len(failed) == 0 {
		return "every category done"
	}
	return fmt.Sprintf("went through every category; %d failed: %s", len(failed), strings.Join(failed, ", "))
}

// withCause is what, and its cause after a colon when there is one.
func withCause(what, cause string) string {
	if cause == "" {
		return what
	}
	return what + ": " + cause
}
