// Package worklog is the worker log's part of a poll (Log): its tail, the
// lines kept for display, and what its lines say of the job, as a value
// (Says) the other parts' judgements read.
package worklog

import (
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/display"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// Log is the worker log's part of a poll: its tail, the lines kept for
// display (the servers' too), and what the lines say of the job: the
// category being worked on, a header just written, the job finished, the
// failures tallied. The Watcher composes it (New, Tail, Rings, Seen,
// FoldLines, Fold, Says).
type Log struct {
	tail           *remote.Tail   // the worker log
	worker, server *snapshot.Ring // sanitised lines for display (Watcher.WorkerLog, Watcher.ServerLog)
	pane           display.Pane   // where the worker log's older lines go when they come
	says           Says
	fails          parse.FailureTally
}

// New tails the worker log at path, keeping lines of each log for
// display; onePoll: a one-shot status (Options.OnePoll).
func New(path string, lines int, onePoll bool) *Log {
	l := &Log{tail: remote.NewTail(path), worker: snapshot.NewRing(lines), server: snapshot.NewRing(lines)}
	// a megabyte back: enough of the worker log to know where each
	// category stands. The Go agent sends all but its last 64 KB (the
	// pane's lines) digested: runs of progress lines thinned on the host.
	// The byte before the start (a whole first line?) fits MaxPerPoll too.
	// A one-shot status shows no pane: all but its last 512 bytes go
	// digested (its last kilobytes are a run of progress lines, of which
	// every fold keeps the last: 4 KB as they are cost 0.8 KB deflated).
	// The dashboard's first read sends only a screen of the pane's lines
	// as they are; the rest of its 64 KB come with the next poll.
	pane := int64(64 << 10)
	if onePoll {
		pane = 512
	} else {
		l.tail.FirstBack = display.FirstScreen
	}
	l.tail.StartBack, l.tail.History, l.tail.Digest = pane, 1<<20-pane-1, parse.DigestWorker
	l.tail.Jump = true // a burst skips to its newest lines, said in the pane
	return l
}

// Tail is the worker log's tail, the poll's first.
func (lg *Log) Tail() *remote.Tail { return lg.tail }

// Rings are the lines kept for display: the worker log's, and the
// servers' logs' (which the servers' part adds to).
func (lg *Log) Rings() (worker, server *snapshot.Ring) { return lg.worker, lg.server }

// Seen notes when the log last grew, by the host's clock (its mtime): a
// first read is not fresh activity.
func (lg *Log) Seen(modTime time.Time) { lg.says.LastLine = modTime }

// FoldLines keeps the lines this poll's tail read for display, and a
// first read's older lines where they go.
func (lg *Log) FoldLines(up remote.TailUpdate) { lg.pane.Add(lg.worker, up, "") }
