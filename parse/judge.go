package parse

import (
	"fmt"
	"strings"
)

// The worker's states as a person would call them, judged from what the
// host tells (pipeline.WorkerState's strings; stalled is judged later,
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

// JudgeWorker is the state table, one for the dashboard, status and the
// report, so that they call one end alike (Judged*).
func JudgeWorker(f WorkerFacts) (state, reason string, byYou bool) {
	switch {
	case !f.Known:
		return JudgedUnknown, "the host's /proc could not be read", false
	case f.Alive:
		return JudgedRunning, "", false
	case f.Killed && f.Phase != WorkerDone:
		return JudgedStopped, fmt.Sprintf("pid %d stopped by synthwatch kill", f.PID), true
	case f.Phase == WorkerDone:
		return JudgedExited, doneWords(f.Failed), false
	case f.Phase == "" && f.Finished:
		return JudgedExited, "the log says all categories finished", false
	case f.Phase == WorkerStopped:
		return JudgedStopped, "ended on a stop signal (not from this synthwatch)", false
	case f.Phase == WorkerFailed:
		return JudgedDied, withCause("worker.json says failed", f.JSONError), false
	case f.Phase != "":
		return JudgedDied, fmt.Sprintf("pid %d is gone while worker.json says %s", f.PID, f.Phase), false
	case f.Ran && f.PID > 0:
		return JudgedDied, fmt.Sprintf("pid %d is gone: not stopped by synthwatch, and the log does not say finished", f.PID), false
	case f.Ran:
		return JudgedDied, "no process writes the worker log or the category files, and the log does not say finished", false
	}
	return JudgedNone, "", false
}

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
