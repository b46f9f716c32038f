package pipeline

import (
	"fmt"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/counts"
	"github.com/synthwatch/synthwatch/pipeline/events"
	"github.com/synthwatch/synthwatch/pipeline/servers"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/vitals"
	"github.com/synthwatch/synthwatch/pipeline/worklog"
	"github.com/synthwatch/synthwatch/remote"
)

// judge is a poll's last fold step: each part judges what it folded and
// keeps its judgement, in the order the judgements need each other: the
// worker (its liveness and the log), the servers and their figures, each
// category (which needs both), the worker's stall (which needs the
// categories), the class rates and the ETA, the cross-checks, the
// baseline, the worker's and the job's events, the vitals (gpu_idle needs
// the worker judged). What a judgement needs next poll (a stall's start,
// the last /metrics sample, the baseline's series) is kept here too.
//
// A part is never handed another part: it judges from its own state and
// the judgements, as values, of the parts before it (worklog.Says, the
// worker's and the servers' views, catInputs, events.DoneInputs, the run lines
// of the worker's category).
func (w *Watcher) judge(reads []servers.Read, vr vitals.Reading, now time.Time) {
	lg := w.log.Says()
	w.live.Judge(lg.Finished, lg.Current, lg.LastLine)
	w.sv.Judge(reads, now, w.live.WaitingServer())
	w.sv.Figures(reads, now, w.cnt.KVDtype())
	w.cnt.Judge(counts.Inputs{Worker: w.live.Shown(), Server: w.sv.Shown().State, Eras: w.sv.Eras(), WJSON: w.live.JSON(), Log: countsLog(lg)}, now)
	w.live.Stall(w.cnt.Shown(), now, w.o.StallAfter)
	w.cnt.CrossCheck(w.live.Shown(), now, w.live.JSON(), lg.LastLine)
	judged := snapshot.Snapshot{Worker: w.live.Shown(), Server: w.sv.Shown(), Categories: w.cnt.Shown()} // what the baseline reads
	w.base.Fold(&judged, now, w.cnt.RunsOf(w.live.Shown().Category), w.sv.Retractions())
	w.live.Events(w.live.Shown(), now, w.lastSnap.Time)
	w.ev.FoldDone(events.DoneInputs{Cats: w.cnt.Shown(), Mtimes: w.cnt.Mtimes(), ManOK: w.cnt.ManifestErr() == nil, Worker: w.live.Shown(),
		WJSON: w.live.JSON(), LogFinished: lg.Finished, LogLast: lg.LastLine}, now)
	w.vit.Fold(vr, w.live.Shown(), now)
}

// project is the Snapshot of the last poll the host answered: the parts'
// judgements as they stand, read and never changed (twice gives the same).
func (w *Watcher) project() snapshot.Snapshot {
	s := snapshot.Snapshot{Schema: 1, Time: w.polledAt.UTC(), Host: w.o.Host, Root: w.o.Root, Connection: w.conn, Warnings: []string{}}
	s.Worker = w.live.Shown()
	s.Server, s.Servers = w.sv.View()
	s.Categories = w.cnt.View()
	s.ETASeconds, s.ETAPart = w.cnt.ETA()
	s.CompletionTokens, s.TokensUnknown, s.TokensPartial = counts.TotalTokens(s.Categories)
	s.TokensSumming = counts.TotalSumming(s.Categories)
	warnChecks(&s, w.polledAt)
	s.Baseline = w.base.Shown()
	s.Vitals = w.vit.View()
	man, _ := w.cnt.Manifest()
	s.Capture = counts.CaptureForecast(s.Categories, man.Capture, s.Vitals.Disk)
	s.Spend = counts.NightSpend(s.Categories, man.Cost)
	s.Events = w.timeline.Recent(50)
	w.cnt.WarnManifest(&s)
	w.live.WarnJSON(&s)
	w.warnSlowReader(&s)
	redact(&s)
	return s
}

// foldTails folds this poll's tails into the parts they speak of (the
// servers' logs, the worker log, the categories' runs.jsonl): a Watcher's,
// for a worker log line speaks to several parts at once (foldWorkerLine).
func (w *Watcher) foldTails(res remote.PollResult, now time.Time) {
	wl := res.Tails[0]
	w.sv.FoldTails(res, now, w.nth())
	if len(wl.Lines) > 0 {
		w.live.SawLogLines()
	}
	w.log.Seen(wl.ModTime) // the host's clock: a first read is not fresh activity
	w.foldTailLines(res, now, true)
}

// foldTailLines folds the lines this poll's tails read: the display rings,
// the worker log's facts, the server log's events, runs.jsonl. A poll whose
// link dropped during the batch (stale, not folded otherwise) still folds
// them: its tails have moved past them, and a line skipped is a line lost.
// flush lets a quiet server log end its last event (not in a stale poll).
func (w *Watcher) foldTailLines(res remote.PollResult, now time.Time, flush bool) {
	wl := res.Tails[0]
	recent := wl.Err == nil && now.Sub(wl.ModTime) < time.Minute
	w.log.FoldLines(wl)
	at := now // when the lines were written, as far as the host says: a first read's are at most as new as the log
	if w.nth() <= 1 && wl.Err == nil && !wl.ModTime.IsZero() && wl.ModTime.Before(now) {
		at = wl.ModTime
	}
	for i, l := range wl.Lines {
		fresh := w.nth() > 1 || recent && len(wl.Lines)-i <= 20
		w.foldWorkerLine(parse.ParseWorkerLine(l.Text), now, at, fresh)
	}
	w.sv.FoldLines(res, now, flush, w.nth())
	if len(res.Tails) < 2 {
		return
	}
	w.cnt.FoldRuns(res.Tails[1:]) // after the server logs: runs.jsonl
}

// foldWorkerLine hands one worker log line to the parts it speaks of: the
// log's own facts, the worker's liveness, the categories it names. fresh
// says it was written about now (read live, or among the last lines of a
// log that just grew), not history from a first read; at is when it was
// written as the host tells (now, or a first read's log time: a progress
// line's rate is as old as the log).
func (w *Watcher) foldWorkerLine(l parse.WorkerLine, now, at time.Time, fresh bool) {
	cur := w.log.Says().Current // a failure counts against the category it was logged under
	watching := w.nth() > 1
	failed := w.log.Fold(l, now, watching && w.cnt.Known(l.Category))
	w.live.FoldLogLine(l)
	w.cnt.FoldLogLine(l, cur, failed, at, watching, fresh)
}

// countsLog is what the categories read of the worker log (counts.Log).
func countsLog(ls worklog.Says) counts.Log {
	return counts.Log{Current: ls.Current, Prev: ls.Prev, HeaderAt: ls.HeaderAt, HeaderOnly: ls.HeaderOnly, LastLine: ls.LastLine}
}

// warnChecks adds the categories' warnings to s, and the worker's when its
// worker.json is old while it lives (now: the poll's time).
func warnChecks(s *snapshot.Snapshot, now time.Time) {
	for _, cv := range s.Categories {
		for _, wmsg := range cv.Warnings {
			s.Warn(snapshot.WarnCategory, wmsg)
		}
	}
	if s.Worker.Source == parse.WorkerStateFile && snapshot.Alive(s.Worker.State) && s.Worker.UpdatedAt != nil && now.Sub(*s.Worker.UpdatedAt) > 30*time.Second {
		s.Warn(snapshot.WarnWorkerJSONStale, fmt.Sprintf("worker.json is %s old while pid %d is alive", now.Sub(*s.Worker.UpdatedAt).Round(time.Second), s.Worker.PID))
	}
}
