package digest

import (
	"fmt"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// How a run ended is decided by two tables, read as docs/REPORT.md's
// table of ends reads: runEndRows for a run of the worker (it has a run
// id) and scriptEndRows for the old script's (it writes no runs.jsonl and
// no worker.json). First match wins; TestRunEndRowsGiveTheDocEnds checks
// them against the doc.

// endRow is one row of a table of ends: when it holds, the run ended so,
// as how says; cause, when the row has one, is the signal or the error.
type endRow[F any] struct {
	when  func(f F) bool
	end   string
	how   func(f F) string
	cause func(f F) string
}

// firstEnd is the first row of rows that holds (the last row always does).
func firstEnd[F any](rows []endRow[F], f F) endRow[F] {
	for _, r := range rows {
		if r.when(f) {
			return r
		}
	}
	panic("a table of ends without its last row")
}

// endBy sets r's end by the first row of rows that holds for f.
func endBy[F any](r *Run, rows []endRow[F], f F) {
	row := firstEnd(rows, f)
	r.End, r.EndHow = row.end, row.how(f)
	if row.cause != nil {
		r.EndCause = row.cause(f)
	}
}

func says[F any](words string) func(F) string { return func(F) string { return words } }

func always[F any](F) bool { return true }

// runEndFacts are the witnesses of how a run of the worker ended.
type runEndFacts struct {
	noID      bool   // records with no run id (an older tool): no run to follow
	ended     bool   // it wrote its own end line
	line      string // that line's end (parse.RunFinished …)
	lineCause string
	json      bool          // worker.json is this run's (the pid's run that started last)
	phase     string        // worker.json's state
	jsonError string        // worker.json's error
	age       time.Duration // since worker.json was written
	updated   time.Time     // when, in the digest's zone
	gone      bool          // the host says worker.json's pid is not alive
	mark      bool          // synthwatch's kill marked its pid
	pid       int
}

func (f runEndFacts) lineSays(end string) bool { return f.ended && f.line == end }
func (f runEndFacts) jsonSays(phase string) bool {
	return !f.ended && f.json && f.phase == phase
}
func (f runEndFacts) jsonFresh() bool { return !f.ended && f.json && f.age <= fresh }
func lineCause(f runEndFacts) string  { return clip(f.lineCause) }

// runEndRows: its own end line first, then worker.json when it is this
// run's (its last word, else how fresh it is), then synthwatch's kill
// mark; with none of them, it died.
var runEndRows = []endRow[runEndFacts]{
	{func(f runEndFacts) bool { return f.noID }, EndUnknown, says[runEndFacts]("records with no run id (an older tool): no run to follow"), nil},
	{func(f runEndFacts) bool { return f.lineSays(parse.RunFinished) }, EndFinished, says[runEndFacts]("its end line"), lineCause},
	{func(f runEndFacts) bool { return f.lineSays(parse.RunStopped) && f.mark }, EndByYou, says[runEndFacts]("its end line and synthwatch's kill mark"), lineCause},
	{func(f runEndFacts) bool { return f.lineSays(parse.RunStopped) }, EndSignal, says[runEndFacts]("its end line"), lineCause},
	{func(f runEndFacts) bool { return f.lineSays(parse.RunFailed) }, EndFailed, says[runEndFacts]("its end line"), lineCause},
	{func(f runEndFacts) bool { return f.ended }, EndUnknown, says[runEndFacts]("its end line"), lineCause}, // an end this digest does not know

	{func(f runEndFacts) bool { return f.jsonSays(parse.WorkerDone) }, EndFinished, says[runEndFacts]("inferred: worker.json says done"), nil},
	{func(f runEndFacts) bool { return f.jsonSays(parse.WorkerFailed) }, EndFailed, says[runEndFacts]("inferred: worker.json says failed"),
		func(f runEndFacts) string { return clip(f.jsonError) }},
	{func(f runEndFacts) bool { return f.jsonSays(parse.WorkerStopped) && f.mark }, EndByYou,
		says[runEndFacts]("inferred: worker.json says stopped, and synthwatch's kill mark names it"), nil},
	{func(f runEndFacts) bool { return f.jsonSays(parse.WorkerStopped) }, EndSignal,
		says[runEndFacts]("inferred: worker.json says stopped, and no kill mark names it"), nil},
	{func(f runEndFacts) bool { return f.jsonFresh() && f.gone }, EndDied, func(f runEndFacts) string {
		return fmt.Sprintf("inferred: worker.json says %s, written %s before the digest, but pid %d is not on the host", f.phase, parse.FormatDuration(f.age), f.pid)
	}, nil},
	{runEndFacts.jsonFresh, EndRunning, func(f runEndFacts) string {
		return "worker.json, written " + parse.FormatDuration(f.age) + " before the digest"
	}, nil},
	{func(f runEndFacts) bool { return !f.ended && f.json && f.mark }, EndByYou, func(f runEndFacts) string {
		return "inferred: synthwatch's kill mark names it, and worker.json stopped at " + f.phase
	}, nil},
	{func(f runEndFacts) bool { return !f.ended && f.json }, EndDied, func(f runEndFacts) string {
		return fmt.Sprintf("inferred: worker.json still says %s but was last written at %s: the process is gone", f.phase, f.updated.Format("15:04:05"))
	}, nil},

	{func(f runEndFacts) bool { return f.mark }, EndByYou,
		says[runEndFacts]("inferred: synthwatch's kill mark names its pid; it wrote no end line (killed after the grace, or an older worker)"), nil},
	{always[runEndFacts], EndDied, says[runEndFacts]("inferred: no end line, no kill mark, and no word from it since"), nil},
}

// scriptEndFacts are the witnesses of how the old script's run ended.
type scriptEndFacts struct {
	state    string // its process as status judges it (parse.JudgeWorker)
	byYou    bool
	pid      int
	holds    string // the file its process has open for writing
	since    string // how long ago its log was last written ("?": never)
	marked   bool   // synthwatch's kill mark follows its last category in the log
	known    bool   // the host can tell who writes the log
	logFresh bool   // its log was written within fresh of the digest
	fatal    bool   // the log ends in a traceback from the script's top level
	exc      string // that traceback's exception line
}

// scriptEndRows: status's judgement of its process, a log written lately
// where the host cannot tell who writes it, the traceback it ends in;
// with none, it died.
var scriptEndRows = []endRow[scriptEndFacts]{
	{func(f scriptEndFacts) bool { return f.state == parse.JudgedRunning }, EndRunning, func(f scriptEndFacts) string {
		return fmt.Sprintf("inferred: pid %d has %s open for writing (the log last written %s before the digest)", f.pid, f.holds, f.since)
	}, nil},
	{func(f scriptEndFacts) bool { return f.state == parse.JudgedStopped && f.byYou && f.marked }, EndByYou,
		says[scriptEndFacts]("inferred: synthwatch's kill mark follows the script's last category in its log"), nil},
	{func(f scriptEndFacts) bool { return f.state == parse.JudgedStopped && f.byYou }, EndByYou, func(f scriptEndFacts) string {
		return fmt.Sprintf("inferred: synthwatch's kill note names pid %d, and no process writes the script's log", f.pid)
	}, nil},
	{func(f scriptEndFacts) bool { return f.state == parse.JudgedExited }, EndFinished,
		says[scriptEndFacts]("inferred: the script's log ends in \"All categories finished\""), nil},
	{func(f scriptEndFacts) bool { return !f.known && f.logFresh }, EndRunning, func(f scriptEndFacts) string {
		return "inferred: the script's log was written " + f.since + " before the digest"
	}, nil},
	{func(f scriptEndFacts) bool { return f.fatal && f.exc == "KeyboardInterrupt" }, EndSignal,
		says[scriptEndFacts]("inferred: the script's log ends in the traceback of a KeyboardInterrupt"), says[scriptEndFacts]("SIGINT (KeyboardInterrupt)")},
	{func(f scriptEndFacts) bool { return f.fatal && f.exc != "" }, EndDied,
		says[scriptEndFacts]("inferred: the script's log ends in the traceback of an exception its top level did not catch"),
		func(f scriptEndFacts) string { return clip(f.exc) }},
	{func(f scriptEndFacts) bool { return f.known }, EndDied,
		says[scriptEndFacts]("inferred: the script's log ends with no word of an end (no \"All categories finished\", no fatal traceback), and no process writes it: killed, or the machine went down"), nil},
	{always[scriptEndFacts], EndDied,
		says[scriptEndFacts]("inferred: the script's log ends with no word of an end (no \"All categories finished\", no fatal traceback)"), nil},
}
