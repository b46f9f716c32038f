package parse

import "time"

// The judgements of a running category's clock, shared by every view as
// catjudge.go's are: when it became current, its stall limit, its errors
// and whether a rate is witnessed. The pipeline (status, --follow, the
// dashboard, the fleet) and the digest (the report) gather the same
// witnesses from the host and ask these functions.

// DefaultStallAfter is the stall limit when none is set (stall_after).
const DefaultStallAfter = 10 * time.Minute

// StallLimit is the one stall limit of every view: stall_after as the user
// set it (flag, env, config.toml), else DefaultStallAfter. No view
// stretches it by a gap it measured itself (a watch of an hour would then
// call running what a one-shot calls stalled).
func StallLimit(stallAfter time.Duration) time.Duration {
	if stallAfter <= 0 {
		return DefaultStallAfter
	}
	return stallAfter
}

// CurrentFacts are the witnesses of when the worker's category became
// current.
type CurrentFacts struct {
	// JSONSince: worker.json is on the category: its category_since, else
	// the worker's start (zero: worker.json is not on it)
	JSONSince time.Time
	// LogAt: the log's last header is the category's: when the log last
	// grew (its mtime at a first read). Zero: no header for it.
	LogAt time.Time
	// HeaderAt: that header read as it was written (a watch's poll time;
	// zero for history from a first read, and in the digest)
	HeaderAt time.Time
	// HeaderOnly: the log ends with that header (and the lines written
	// with it)
	HeaderOnly bool
	// PrevLast: the previous category's last record (its file's mtime),
	// when it was worked on (not skipped); zero: none
	PrevLast time.Time
	// WriterStart: the writer's start, when it has written to the log
	// since (zero: unknown)
	WriterStart time.Time
}

// BecameCurrent is when the category the worker is on became current,
// from the host's evidence, whenever a view first sees it:
//   - worker.json's category_since (or the worker's start);
//   - its log header, read as it was written: that poll's time;
//   - a log that ends with its header: the log's time;
//   - a header further back: the old script's lines carry no time, and
//     what it logged since (tracebacks of requests that time out) says
//     nothing of when the category began, so the evidence from before the
//     header: the previous category's last record, else the writer's
//     start; never later than the log's last line;
//   - a header and nothing else: the log's time, which the category is at
//     least as old as (weak: the stall clock takes it only when the
//     category never grew).
//
// Zero when neither worker.json nor the log's last header is on it: the
// stall is judged by growth alone.
func BecameCurrent(f CurrentFacts) (t time.Time, weak bool) {
	switch {
	case !f.JSONSince.IsZero():
		return f.JSONSince, false
	case f.LogAt.IsZero():
		return time.Time{}, false
	case !f.HeaderAt.IsZero():
		return f.HeaderAt, false
	case f.HeaderOnly:
		return f.LogAt, false
	}
	switch {
	case !f.PrevLast.IsZero():
		t = f.PrevLast // the header follows the previous category's last record
	case !f.WriterStart.IsZero() && f.WriterStart.Add(2*time.Second).Before(f.LogAt):
		// the start is read to the clock tick, from a boot time in whole
		// seconds
		t = f.WriterStart
	default:
		return f.LogAt, true
	}
	if f.LogAt.Before(t) {
		return f.LogAt, false
	}
	return t, false
}

// ErrorFacts are the witnesses of a category's failed requests.
type ErrorFacts struct {
	ErrLines    int64 // errors.jsonl's lines
	JSONErrors  int64 // worker.json's errors for it
	JSONFailed  *int  // worker.json's failed_prompts for it (it counts them itself)
	LogProgress int64 // its last progress line's "(N err)"
	LogFailures int64 // the failures the worker log reported since its header (FailureTally)
}

// CategoryErrors is a category's ERR: worker.json's failed prompts where it
// counts them, else the most any witness says.
func CategoryErrors(f ErrorFacts) int64 {
	if f.JSONFailed != nil {
		return int64(*f.JSONFailed)
	}
	return max(f.ErrLines, f.JSONErrors, f.LogProgress, f.LogFailures)
}

// WorkerRateFresh is how old worker.json may be for its rate to count.
const WorkerRateFresh = 30 * time.Second

// RateFacts are the witnesses of a running category's rate that every
// view has at first sight.
type RateFacts struct {
	WorkerRate float64   // worker.json's rate for it, per minute
	WorkerAt   time.Time // worker.json's updated_at
	LogRate    float64   // its last progress line's since its header, per minute
	LogAt      time.Time // when the log last grew (that line is no newer)
	// Records: the times of the category's last records (TailRecordSpan),
	// which every reader has at first sight
	Records RecordSpan
	Now     time.Time
	Limit   time.Duration // the stall limit (StallLimit)
}

// WitnessedRate says whether a running category has a rate every view can
// claim, and that rate: worker.json's while fresh, else the log's last
// progress line while the log is younger than the stall limit, else the
// records' own times (SpanRate: a writer that logs nothing, such as the
// old script relaunched without PYTHONUNBUFFERED, still dates what it
// writes). A rate a
// view measured from the file's growth over its own polls cannot be had
// by a one-shot view (status, the report, a first screen), so it claims
// nothing alone: with no witness, no view claims a rate or an ETA; with
// one, a watching view may show its own measurement instead.
func WitnessedRate(f RateFacts) (perMin float64, ok bool) {
	if f.WorkerRate > 0 && !f.WorkerAt.IsZero() && f.Now.Sub(f.WorkerAt) < WorkerRateFresh {
		return f.WorkerRate, true
	}
	if f.LogRate > 0 && !f.LogAt.IsZero() && f.Now.Sub(f.LogAt) < StallLimit(f.Limit) {
		return f.LogRate, true
	}
	return SpanRate(f.Records, f.Now, f.Limit)
}
