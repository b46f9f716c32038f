package counts

import (
	"fmt"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// logEvery is how many records the worker writes between progress lines.
const logEvery = 50

// slack is what a poll explains: a progress line's worth, plus two minutes
// at the category's rate.
func slack(v *snapshot.Category) int64 { return logEvery + int64(2*v.RatePerMin) }

// sourceChecks compares the worker log's and worker.json's counts with the
// file, adds a row warning and a check for each that disagrees, and records
// each new disagreement as an event.
func (k *Set) sourceChecks(wk snapshot.Worker, v *snapshot.Category, c *catState, now time.Time, wjson *parse.WorkerState, logLast time.Time) {
	if chk, msg, ok := logCheck(wk, v, c, now, logLast); ok {
		k.addCheck(v, c, chk, msg, now)
	}
	if chk, msg, ok := jsonCheck(wk, v, wjson, now); ok {
		k.addCheck(v, c, chk, msg, now)
	}
	for src := range c.disagree {
		if !hasCheck(v.Checks, src) {
			delete(c.disagree, src) // agree again: a later disagreement is news
		}
	}
}

// logCheck is the worker log's last progress line against the file, for
// the category a live worker is on: a check when they disagree past slack.
func logCheck(wk snapshot.Worker, v *snapshot.Category, c *catState, now, logLast time.Time) (snapshot.SourceCheck, string, bool) {
	p := c.logProgress
	if p.Kind != parse.WProgress || v.Name != wk.Category || !snapshot.Alive(wk.State) {
		return snapshot.SourceCheck{}, "", false
	}
	logDone := int64(p.Done)
	if c.logResumed > 0 && p.Total == c.logToGo {
		logDone += int64(c.logResumed) // the old script counts this run only
	}
	gap := v.Done - logDone
	if gap >= -5 && gap <= slack(v) {
		return snapshot.SourceCheck{}, "", false
	}
	why := "the worker logs every 50 records"
	if age := now.Sub(logLast); !logLast.IsZero() && age > time.Minute {
		why = "log last written " + snapshot.FormatDuration(age) + " ago (buffered, or another log)"
	}
	if gap < 0 {
		why = "the log counted records the file does not hold (cut after a crash, or another file)"
	}
	msg := fmt.Sprintf("%s: the worker log says %d/%d but raw_responses.jsonl has %d records; the file is authoritative: %s",
		v.Name, p.Done, p.Total, v.Done, why)
	return snapshot.SourceCheck{Source: "log", Says: logDone, File: v.Done, Authority: parse.RawFile, Why: why}, msg, true
}

// jsonCheck is worker.json's count of a running category against the
// file: a check when they disagree past slack.
func jsonCheck(wk snapshot.Worker, v *snapshot.Category, wjson *parse.WorkerState, now time.Time) (snapshot.SourceCheck, string, bool) {
	js := wjson.CategoryNamed(v.Name)
	if js == nil || wjson == nil || js.State != parse.CatRunning {
		return snapshot.SourceCheck{}, "", false
	}
	if gap := v.Done - int64(js.Done); gap >= -5 && gap <= slack(v) {
		return snapshot.SourceCheck{}, "", false
	}
	why := "its worker is not running"
	if age := now.Sub(wjson.UpdatedAt); snapshot.Alive(wk.State) && wk.PID == wjson.PID {
		why = "worker.json last written " + snapshot.FormatDuration(age) + " ago"
	}
	msg := fmt.Sprintf("%s: worker.json says %d done but raw_responses.jsonl has %d records; the file is authoritative: %s",
		v.Name, js.Done, v.Done, why)
	return snapshot.SourceCheck{Source: parse.WorkerStateFile, Says: int64(js.Done), File: v.Done, Authority: parse.RawFile, Why: why}, msg, true
}

func (k *Set) addCheck(v *snapshot.Category, c *catState, chk snapshot.SourceCheck, msg string, now time.Time) {
	v.Checks = append(v.Checks, chk)
	v.Warnings = append(v.Warnings, msg)
	if c.disagree == nil {
		c.disagree = map[string]bool{}
	}
	if !c.disagree[chk.Source] {
		c.disagree[chk.Source] = true
		k.tl.Note(now, "cross_check", v.Name, msg)
	}
}

func hasCheck(cs []snapshot.SourceCheck, src string) bool {
	for _, c := range cs {
		if c.Source == src {
			return true
		}
	}
	return false
}
