package worklog

import (
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Says is what the worker log says of the job, as the other parts'
// judgements read it: a value (Log.Says), never the part itself.
type Says struct {
	Current    string    // category of the latest "Processing:" line
	Prev       string    // the category of the header before it ("" if none was read)
	HeaderAt   time.Time // when that header was read as it was written (zero: history from a first read)
	HeaderOnly bool      // only the lines written with the header since it: the worker just switched
	LastLine   time.Time // when the log last grew
	Finished   bool      // "All categories finished."
}

// Says is what the log says this poll.
func (lg *Log) Says() Says { return lg.says }

// Fold folds one worker log line into what the log says; watched: a header
// for a known category read while we watch (its time is now). It says
// whether the line is a failure the tally counts.
func (lg *Log) Fold(l parse.WorkerLine, now time.Time, watched bool) (failed bool) {
	ls := &lg.says
	failed = lg.fails.Fold(l)
	switch l.Kind {
	case parse.WSeparator, parse.WPrompts, parse.WResume, parse.WRunning, parse.WSkip:
		// written with the header, at once: the log still "ends with" it
	case parse.WOther:
		if strings.TrimSpace(l.Text) != "" {
			ls.HeaderOnly = false
		}
	default:
		ls.HeaderOnly = false // progress, an error, a wait: time passed since the header
	}
	switch l.Kind {
	case parse.WProcessing:
		if ls.Current != l.Category {
			ls.Prev = ls.Current
		}
		ls.Current, ls.Finished, ls.HeaderOnly, ls.HeaderAt = l.Category, false, true, time.Time{}
		if watched {
			ls.HeaderAt = now
		}
	case parse.WFinished:
		ls.Finished = true
	}
	return failed
}
