package snapshot

// The three states a Snapshot judges: the worker's, each server's and each
// category's. Their strings are status --json's (schema 1: never renamed);
// the state tables of docs/STATUS.md and docs/SERVER-STATES.md list
// exactly the ones in WorkerStates, ServerStates and CategoryStates
// (TestDocStateTables).

// WorkerState is Snapshot.Worker.State.
type WorkerState string

// Worker states.
const (
	WorkerRunning WorkerState = "running" // a live process, records arriving
	WorkerStalled WorkerState = "stalled" // alive, but no new records lately
	WorkerStopped WorkerState = "stopped" // ended on a stop request; by_you when our kill did it
	WorkerExited  WorkerState = "exited"  // ended with the job done
	WorkerDied    WorkerState = "died"    // gone, not done, not stopped by us
	WorkerNone    WorkerState = "none"    // nothing has run here
	WorkerUnknown WorkerState = "unknown" // the host could not tell (link down, /proc unreadable)
)

// WorkerStates are the worker states, in docs/STATUS.md's order.
var WorkerStates = []WorkerState{WorkerRunning, WorkerStalled, WorkerStopped, WorkerExited, WorkerDied, WorkerNone, WorkerUnknown}

// Alive says whether a worker state is a live process.
func Alive(state WorkerState) bool { return state == WorkerRunning || state == WorkerStalled }

// ServerState is Snapshot.Server.State (and each of Servers).
type ServerState string

// Server states.
const (
	ServerStarting  ServerState = "starting"  // loading: startup lines, not answering yet
	ServerReady     ServerState = "ready"     // answering, idle
	ServerBusy      ServerState = "busy"      // answering, with requests running or queued
	ServerUnhealthy ServerState = "unhealthy" // answering badly: timeouts, 5xx, a fault in the log
	ServerHung      ServerState = "hung"      // alive but no progress: a collective timed out, workers wait, requests at 0 tok/s
	ServerDown      ServerState = "down"      // nothing listens, the log is quiet, or the worker waits
	ServerStopped   ServerState = "stopped"   // the log's last word is a graceful stop (SIGTERM, draining): not a crash
	ServerCrashed   ServerState = "crashed"   // the log's last word is a crash
	ServerUnknown   ServerState = "unknown"   // no witness at all
)

// ServerStates are the server states, in docs/SERVER-STATES.md's order.
var ServerStates = []ServerState{ServerStarting, ServerReady, ServerBusy, ServerUnhealthy, ServerHung, ServerDown, ServerStopped, ServerCrashed, ServerUnknown}

// ServerTrouble: a state every view names with its reason (the server is
// not serving as it should, or not at all).
func ServerTrouble(state ServerState) bool {
	switch state {
	case ServerUnhealthy, ServerHung, ServerDown, ServerStopped, ServerCrashed:
		return true
	}
	return false
}

// CategoryState is a Snapshot category's State.
type CategoryState string

// Category states.
const (
	StatePending CategoryState = "pending"
	StateRunning CategoryState = "running"
	StateStalled CategoryState = "stalled"
	StateDone    CategoryState = "done"
	StateStopped CategoryState = "stopped" // the worker was stopped (by you, or a stop request) while on it
	StateDied    CategoryState = "died"    // the worker died while on it
	StatePartial CategoryState = "partial" // some records, and no worker on it (an earlier run's, or another's)
	StateFailed  CategoryState = "failed"
	StateUnknown CategoryState = "unknown"
	// StateSkipped is worker.json's word for a category a later run found
	// done; pipeline's counts.view gives done for it, so no Snapshot of this version
	// carries it. Views still read it as final.
	StateSkipped CategoryState = "skipped"
)

// CategoryStates are the states counts.view gives (and a stale poll's
// unknown), in docs/STATUS.md's order.
var CategoryStates = []CategoryState{StatePending, StateRunning, StateStalled, StateDone, StateFailed, StateStopped, StateDied, StatePartial, StateUnknown}

// Final says whether a state gets no ETA and no stall.
func Final(state CategoryState) bool {
	return state == StateDone || state == StateSkipped || state == StateFailed
}
