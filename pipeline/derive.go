package pipeline

import (
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
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
// the judgements, as values, of the parts before it (logSays, the
// worker's and the servers' views, catInputs, the run lines of the
// worker's category).
func (w *Watcher) judge(reads []serverRead, vr vitalsRead, now time.Time) {
	lg := w.log.says()
	w.live.judge(lg.finished, lg.current, lg.lastLine)
	w.sv.judge(reads, now, w.live.waitingServer())
	w.sv.figures(reads, now, w.cnt.runKVDtype())
	w.cnt.judge(catInputs{worker: w.live.shown, server: w.sv.shown.State, eras: w.sv.eras(), wjson: w.live.wjson, log: lg}, now)
	w.live.stall(w.cnt.shown, now, w.o.StallAfter)
	w.cnt.noteClassRates()
	w.cnt.judgeETA()
	w.cnt.crossChecks(w.live.shown, now, w.live.wjson, lg.lastLine)
	judged := snapshot.Snapshot{Worker: w.live.shown, Server: w.sv.shown, Categories: w.cnt.shown} // what the baseline reads
	w.base.fold(&judged, now, w.cnt.runsOf(w.live.shown.Category), w.sv.retractions())
	w.live.events(w.live.shown, now, w.lastSnap.Time)
	w.ev.foldDone(w.cnt.shown, w.cnt.shownAt, w.cnt.manErr == nil, w.live.shown, lg, w.live.wjson, now)
	w.vit.fold(vr, w.live.shown, now)
}

// project is the Snapshot of the last poll the host answered: the parts'
// judgements as they stand, read and never changed (twice gives the same).
func (w *Watcher) project() snapshot.Snapshot {
	s := snapshot.Snapshot{Schema: 1, Time: w.polledAt.UTC(), Host: w.o.Host, Root: w.o.Root, Connection: w.ev.conn, Warnings: []string{}}
	s.Worker = w.live.shown
	s.Server, s.Servers = w.sv.view()
	s.Categories = w.cnt.view()
	s.ETASeconds, s.ETAPart = w.cnt.eta, w.cnt.etaPart
	s.CompletionTokens, s.TokensUnknown, s.TokensPartial = totalTokens(s.Categories)
	warnChecks(&s, w.polledAt)
	s.Baseline = w.base.shown
	s.Vitals = w.vit.view()
	s.Capture = captureForecast(s.Categories, w.cnt.manifest.Capture, s.Vitals.Disk)
	s.Spend = nightSpend(s.Categories, w.cnt.manifest.Cost)
	s.Events = w.timeline.Recent(50)
	w.cnt.warnManifest(&s)
	w.live.warnJSON(&s)
	w.warnSlowReader(&s)
	redact(&s)
	return s
}
