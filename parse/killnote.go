package parse

import (
	"fmt"
	"time"
)

// The kill note: before it signals, the kill action leaves one line in
// KillNotePath (written to a temporary file, then renamed), naming the pid,
// the process's start time (clock ticks after boot, /proc/PID/stat field
// 22: with the pid it names one process for good) and the host's clock
// (Unix seconds). No other process writes there, unlike the worker log,
// where a writer holding it with ">" overwrites an appended marker. The
// last kill wins.
const KillNoteFormat = "synthwatch stopped pid %d start %d at %d\n" // printf(1) and fmt.Sscanf

// KillNote is a parsed kill note.
type KillNote struct {
	PID   int
	Start uint64 // 0: unknown
	At    time.Time
}

// ParseKillNote reads a kill note (ok false if it is none).
func ParseKillNote(b []byte) (KillNote, bool) {
	var n KillNote
	var at int64
	if _, err := fmt.Sscanf(string(b), KillNoteFormat, &n.PID, &n.Start, &at); err != nil || n.PID <= 0 {
		return KillNote{}, false
	}
	n.At = time.Unix(at, 0)
	return n, true
}
