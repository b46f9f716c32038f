package pipeline

import (
	"math"
	"time"
)

// buildSnapshot asks each part for its view, in the order the judgements
// need: the worker (its liveness and the log), the servers, each category
// (which needs both), the worker's stall (which needs the categories), the
// ETA, cross-checks and baseline, the worker's and the job's events, the
// vitals, the timeline. A view keeps what its judgement needs next poll (a
// stall's start, the last /metrics sample, the baseline's series).
func (w *Watcher) buildSnapshot(s *Snapshot, reads []serverRead, vr vitalsRead, now time.Time) {
	s.Worker = w.live.view(w.log.finished, w.log.current)
	var each []Server
	s.Server, each = w.sv.serverViews(reads, now, w.live.waitingServer())
	if len(each) > 1 || each[0].Role == RoleRouter {
		s.Servers = each
	} else {
		s.Server.Name, s.Server.Role = "", "" // one server: the object as it always was, with the URL it probed
	}
	if s.Server.Source != "" && !s.Server.FiguresStale {
		w.sv.thr.add(s.Server.GenThroughput)
	} else {
		w.sv.thr.add(math.NaN())
	}
	s.Server.Throughput = w.sv.thr.values()
	w.serverFigures(s, each, reads, now)
	for _, n := range w.cnt.order {
		s.Categories = append(s.Categories, w.cnt.view(w.cnt.cats[n], s.Worker, s.Server.State, now, w.live.wjson, &w.log))
	}
	w.live.stall(s, now, w.o.StallAfter)
	w.cnt.noteClassRates(s.Categories)
	s.ETASeconds, s.ETAPart = w.cnt.pipelineETA(s.Categories)
	s.CompletionTokens, s.TokensUnknown, s.TokensPartial = totalTokens(s.Categories)
	w.cnt.crossChecks(s, now, w.live.wjson, w.log.lastLine)
	w.base.fold(s, now, w.cnt.cats, w.sv.first.retractions)
	w.live.events(s.Worker, now, w.lastSnap.Time)
	w.doneEvents(s, now)
	w.vit.fold(vr, s.Worker, now) // gpu_idle needs the worker judged
	s.Vitals = w.vit.view()
	s.Events = w.timeline.Recent(50)
}
