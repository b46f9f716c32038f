package pipeline

import (
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/counts"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// logs is the worker log's part of a poll: its tail, the lines kept for
// display (the servers' too), and what the lines say of the job: the
// category being worked on, a header just written, the job finished, the
// failures tallied.
type logs struct {
	tail           *remote.Tail   // the worker log
	worker, server *snapshot.Ring // sanitised lines for display (Watcher.WorkerLog, Watcher.ServerLog)
	logSays
	fails parse.FailureTally
}

// logSays is what the worker log says of the job, as the other parts'
// judgements read it: a value (logs.says), never the part itself.
type logSays struct {
	current    string    // category of the latest "Processing:" line
	prev       string    // the category of the header before it ("" if none was read)
	headerAt   time.Time // when that header was read as it was written (zero: history from a first read)
	headerOnly bool      // only the lines written with the header since it: the worker just switched
	lastLine   time.Time // when the log last grew
	finished   bool      // "All categories finished."
}

// forCounts is what the categories read of it (counts.Log).
func (ls logSays) forCounts() counts.Log {
	return counts.Log{Current: ls.current, Prev: ls.prev, HeaderAt: ls.headerAt, HeaderOnly: ls.headerOnly, LastLine: ls.lastLine}
}

// says is what the log says this poll.
func (lg *logs) says() logSays { return lg.logSays }

// newLogs tails the worker log at path, keeping lines of each log for
// display; onePoll: a one-shot status (Options.OnePoll).
func newLogs(path string, lines int, onePoll bool) logs {
	l := logs{tail: remote.NewTail(path), worker: snapshot.NewRing(lines), server: snapshot.NewRing(lines)}
	// a megabyte back: enough of the worker log to know where each
	// category stands. The Go agent sends all but its last 64 KB (the
	// pane's lines) digested: runs of progress lines thinned on the host.
	// The byte before the start (a whole first line?) fits MaxPerPoll too.
	// A one-shot status shows no pane: all but its last 512 bytes go
	// digested (its last kilobytes are a run of progress lines, of which
	// every fold keeps the last: 4 KB as they are cost 0.8 KB deflated).
	pane := int64(64 << 10)
	if onePoll {
		pane = 512
	}
	l.tail.StartBack, l.tail.History, l.tail.Digest = pane, 1<<20-pane-1, parse.DigestWorker
	l.tail.Jump = true // a burst skips to its newest lines, said in the pane
	return l
}

// fold folds one worker log line into what the log says; watched: a header
// for a known category read while we watch (its time is now). It says
// whether the line is a failure the tally counts.
func (lg *logs) fold(l parse.WorkerLine, now time.Time, watched bool) (failed bool) {
	failed = lg.fails.Fold(l)
	switch l.Kind {
	case parse.WSeparator, parse.WPrompts, parse.WResume, parse.WRunning, parse.WSkip:
		// written with the header, at once: the log still "ends with" it
	case parse.WOther:
		if strings.TrimSpace(l.Text) != "" {
			lg.headerOnly = false
		}
	default:
		lg.headerOnly = false // progress, an error, a wait: time passed since the header
	}
	switch l.Kind {
	case parse.WProcessing:
		if lg.current != l.Category {
			lg.prev = lg.current
		}
		lg.current, lg.finished, lg.headerOnly, lg.headerAt = l.Category, false, true, time.Time{}
		if watched {
			lg.headerAt = now
		}
	case parse.WFinished:
		lg.finished = true
	}
	return failed
}
