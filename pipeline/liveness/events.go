package liveness

import (
	"fmt"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// Events records starts, exits and pid changes, including a worker
// that started and ended between two polls (worker.json moved on).
func (l *Live) Events(v snapshot.Worker, now, lastSnap time.Time) {
	alive := snapshot.Alive(v.State)
	if v.State == snapshot.WorkerUnknown {
		return
	}
	if l.polled {
		l.noteTransition(v, alive, now, lastSnap)
		l.noteBetweenPolls(v, alive, now)
	}
	l.polled, l.wasAlive, l.wasPID = true, alive, v.PID
	if st := l.wjson; st != nil {
		l.seenPID, l.seenStart = st.PID, st.StartedAt
	}
}

// noteTransition records the worker's start, its exit, or another taking
// over, from the last poll's worker to this one's.
func (l *Live) noteTransition(v snapshot.Worker, alive bool, now, lastSnap time.Time) {
	switch {
	case alive && !l.wasAlive:
		l.tl.Note(now, "worker_started", v.Category, fmt.Sprintf("worker started (pid %d): %s", v.PID, v.Command))
	case alive && v.PID != l.wasPID:
		// another worker took over between two polls (a restart): the
		// old one ended, a new one started
		l.tl.Note(now, "worker_exited", "", fmt.Sprintf("worker pid %d %s", l.wasPID, l.goneText(l.wasPID)))
		l.tl.Note(now, "worker_started", v.Category, fmt.Sprintf("worker started (pid %d, after pid %d): %s", v.PID, l.wasPID, v.Command))
	case !alive && l.wasAlive && v.PID == l.wasPID:
		l.tl.Note(l.endedAt(v.PID, now, lastSnap), "worker_exited", "", fmt.Sprintf("worker pid %d %s", l.wasPID, endText(v)))
	case !alive && l.wasAlive:
		l.tl.Note(now, "worker_exited", "", fmt.Sprintf("worker pid %d %s", l.wasPID, l.goneText(l.wasPID)))
	}
}

// noteBetweenPolls records a worker worker.json names that is neither the
// one alive now nor the one before, nor one seen already: it ran between
// two polls.
func (l *Live) noteBetweenPolls(v snapshot.Worker, alive bool, now time.Time) {
	st := l.wjson
	if st == nil || st.PID <= 0 || alive && st.PID == v.PID || st.PID == l.wasPID ||
		st.PID == l.seenPID && st.StartedAt.Equal(l.seenStart) {
		return
	}
	start, end := timeline.NotAfter(st.StartedAt, now), st.UpdatedAt
	if end.Before(start) || end.After(now) {
		end = start
	}
	l.tl.Note(start, "worker_started", "", fmt.Sprintf("worker started (pid %d) between two polls", st.PID))
	l.tl.Note(end, "worker_exited", "", fmt.Sprintf("worker pid %d ended between two polls (worker.json: %s)", st.PID, st.State))
}

// goneText says how a worker that is no longer the one judged ended, as
// far as the host tells: our kill, or just ended.
func (l *Live) goneText(pid int) string {
	if l.killed[pid] || l.note.names(pid, 0) {
		return "stopped by you"
	}
	return "ended"
}

func endText(v snapshot.Worker) string {
	switch {
	case v.ByYou:
		return "stopped by you"
	case v.State == snapshot.WorkerExited:
		return "exited: " + v.Reason
	case v.State == snapshot.WorkerStopped:
		return "stopped: " + v.Reason
	}
	return string(v.State) + ": " + v.Reason
}

// endedAt is when the worker pid, alive at the last fresh poll, ended, as
// the host tells: worker.json's last update when it is that pid's final
// state and came after that poll, so an exit while this machine slept keeps
// its own time; else now.
func (l *Live) endedAt(pid int, now, lastSnap time.Time) time.Time {
	st := l.wjson
	if st == nil || st.PID != pid || st.UpdatedAt.After(now) || !st.UpdatedAt.After(lastSnap) {
		return now
	}
	switch st.State {
	case parse.WorkerDone, parse.WorkerFailed, parse.WorkerStopped:
		return st.UpdatedAt
	}
	return now
}
