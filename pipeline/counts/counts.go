package counts

import (
	"fmt"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// countError says why this poll's counts of a category failed, "" when
// they did not. A raw_responses.jsonl that vanished after it held lines is
// a failure too, not 0 records. The figures stay the last good ones; the
// Counter counts again once the file can be read.
func countError(c *catState, raw, errs, prompts remote.CountUpdate) string {
	var why []string
	switch {
	case raw.Err != nil:
		why = append(why, errText(raw.Err))
	case raw.Missing && c.lines > 0:
		why = append(why, "raw_responses.jsonl vanished")
	}
	for _, u := range []remote.CountUpdate{errs, prompts} {
		if u.Err != nil {
			why = append(why, errText(u.Err))
		}
	}
	return strings.Join(why, "; ")
}

// keepsLastCount is true when raw's figure is not to be taken: a failed
// count, or a file that vanished (countError says which).
func keepsLastCount(c *catState, raw remote.CountUpdate) bool {
	return raw.Err != nil || raw.Missing && c.lines > 0
}

// unread is true when raw_responses.jsonl has never been counted and its
// last count failed (not readable, a FIFO, a directory): no figure of it
// is known, so its row claims none and its state is unknown.
func unread(c *catState) bool { return c.rawFailed && !c.known }

func errText(err error) string {
	s := parse.SanitizeString(err.Error())
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

// countFigures sets v's Done, Lines, Errors and CountError from the line
// counts, worker.json (js, nil without one) and the worker log, and adds
// the warnings they call for, first in the row's list.
//
// Done is parse.JudgeDone's, as the report's: unique records (lines −
// worker.json's extra lines) where the worker measured them at its resume
// scan, else the records when the Go agent examined every line, else the
// line count.
//
// Errors is failed_prompts when worker.json gives it (prompts whose latest
// attempt failed; a prompt failing on every start counts once), else the
// most any source says: errors.jsonl lines, worker.json's errors, the
// progress line's "(N err)", the failures the log reported since the
// category's header (parse.FailureTally: the old script's tracebacks, which
// its "(N err)" counts only every 50 successes; it writes no errors.jsonl).
//
// scanVoid says the file was rewritten (recounted from zero) since this
// worker's scan: its extra_lines no longer describe it.
func countFigures(c *catState, js *parse.CategoryState, scanVoid bool, v *snapshot.Category) {
	v.Lines, v.Done = c.lines, c.lines
	switch {
	case c.countErr != "" && unread(c):
		v.CountError = c.countErr // no good figure ever: none is claimed
		v.Warnings = append(v.Warnings, fmt.Sprintf("%s: its records cannot be counted: %s", c.name, c.countErr))
	case c.countErr != "" && c.rawFailed:
		v.CountError = c.countErr
		v.Warnings = append(v.Warnings, fmt.Sprintf("%s: count failed, showing the last good figure (%d lines): %s", c.name, c.lines, c.countErr))
	case c.countErr != "": // prompts.jsonl or errors.jsonl: the records' figure is this poll's
		v.CountError = c.countErr
		v.Warnings = append(v.Warnings, fmt.Sprintf("%s: a file beside its records cannot be counted (their %d lines are counted): %s", c.name, c.lines, c.countErr))
	}
	df := parse.DoneFacts{Lines: c.lines, Worker: js, ScanVoid: scanVoid}
	if c.known && c.countErr == "" && c.tok.complete() && c.tok.sum.out.Unexamined == 0 && c.tok.sum.Records <= c.lines {
		df.Records, df.RecordsKnown = c.tok.sum.Records, true // the agent examined every line
	}
	var note string
	if v.Done, note = parse.JudgeDone(df); note != "" {
		v.Warnings = append(v.Warnings, c.name+": "+note)
	}
	v.Errors = parse.CategoryErrors(errorFacts(c, js)) // as the report counts them
}

// errorFacts are a category's witnesses of failed records: its own error
// lines, the log's tracebacks and progress line, worker.json's counts.
func errorFacts(c *catState, js *parse.CategoryState) parse.ErrorFacts {
	ef := parse.ErrorFacts{ErrLines: c.errLines, LogFailures: c.logFailures} // tracebacks and error lines since its header
	if js != nil {
		ef.JSONErrors, ef.JSONFailed = int64(js.Errors), js.FailedPrompts
	}
	if c.logProgress.Kind == parse.WProgress {
		ef.LogProgress = int64(c.logProgress.Errors)
	}
	return ef
}
