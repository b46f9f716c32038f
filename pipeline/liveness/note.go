package liveness

import (
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// killNote is a parsed kill note (parse.KillNoteFormat's line), read only
// while no worker is alive.
type killNote struct {
	pid   int
	start uint64 // 0: unknown
	at    time.Time
}

// parseKillNote reads a kill note (ok false if it is none).
func parseKillNote(b []byte) (killNote, bool) {
	n, ok := parse.ParseKillNote(b)
	return killNote{pid: n.PID, start: n.Start, at: n.At}, ok
}

// names: the note is about process pid started at start (0: unknown).
func (n *killNote) names(pid int, start uint64) bool {
	return n != nil && n.pid == pid && (start == 0 || n.start == 0 || n.start == start)
}

// workerFacts are the witnesses of one poll, for workerStateFor.
type workerFacts = parse.WorkerFacts

// workerStateFor is the state table (parse.JudgeWorker, the report's too):
// what a person would call the worker. Stalled is decided later, from the
// categories.
func workerStateFor(f workerFacts) (state snapshot.WorkerState, reason string, byYou bool) {
	s, reason, byYou := parse.JudgeWorker(f)
	return snapshot.WorkerState(s), reason, byYou
}
