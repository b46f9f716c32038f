package pipeline

import (
	"fmt"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

func (w *Watcher) foldTails(res remote.PollResult, now time.Time) {
	wl := res.Tails[0]
	for _, sv := range w.sv.list {
		w.sv.foldServerTail(sv, res, now, w.nth())
	}
	if len(wl.Lines) > 0 {
		w.live.logLines = true
	}
	w.log.lastLine = wl.ModTime // the host's clock: a first read is not fresh activity
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
	addShown(w.log.worker, wl, "")
	at := now // when the lines were written, as far as the host says: a first read's are at most as new as the log
	if w.nth() <= 1 && wl.Err == nil && !wl.ModTime.IsZero() && wl.ModTime.Before(now) {
		at = wl.ModTime
	}
	for i, l := range wl.Lines {
		fresh := w.nth() > 1 || recent && len(wl.Lines)-i <= 20
		w.foldWorkerLine(parse.ParseWorkerLine(l.Text), now, at, fresh)
	}
	for _, sv := range w.sv.list {
		w.sv.foldServerLines(sv, res, now, flush, w.nth())
	}
	if len(res.Tails) < 2 {
		return
	}
	byRuns := make(map[string]*catState, len(w.cnt.cats)) // not a scan of the categories per tail: 10,000 of each is 10^8
	for _, c := range w.cnt.cats {
		byRuns[c.runs.Path] = c
	}
	for _, up := range res.Tails[1:] { // after the server logs: runs.jsonl
		if c := byRuns[up.Path]; c != nil {
			c.foldRuns(up)
		}
	}
}

// foldWorkerLine hands one worker log line to the parts it speaks of: the
// log's own facts, the worker's liveness, the categories it names. fresh
// says it was written about now (read live, or among the last lines of a
// log that just grew), not history from a first read; at is when it was
// written as the host tells (now, or a first read's log time: a progress
// line's rate is as old as the log).
func (w *Watcher) foldWorkerLine(l parse.WorkerLine, now, at time.Time, fresh bool) {
	cur := w.log.current // a failure counts against the category it was logged under
	watching := w.nth() > 1
	failed := w.log.fold(l, now, watching && w.cnt.cats[l.Category] != nil)
	w.live.foldLogLine(l)
	w.cnt.foldLogLine(l, cur, failed, at, watching, fresh)
}

// foldRuns reads new runs.jsonl lines and notes each server configuration.
func (c *catState) foldRuns(up remote.TailUpdate) {
	for _, l := range up.Lines {
		r, err := parse.ParseRunLine([]byte(l.Text))
		if err == nil && r.IsTally() && r.Run != "" {
			c.tallies.Note(r.Run, *r.Tally) // what the run wasted and drew (spend.go)
			continue
		}
		if err == nil && r.IsEnd() {
			continue // how a run ended is the night report's, not a configuration
		}
		if err == nil && r.Run != "" {
			c.noteRun(r)
		}
		// A snapshot that failed (parse.ConfigUnknown; before that, a hash
		// of an empty info) says nothing about the configuration: it is not one.
		if err != nil || !r.Snapshot.Known() {
			continue
		}
		snap := r.Snapshot
		if c.configDesc == nil {
			c.configDesc = map[string]string{}
		}
		if _, seen := c.configDesc[snap.ConfigKey]; !seen {
			c.configs = append(c.configs, snap.ConfigKey)
			kv := fmt.Sprint(snap.Info["kv_cache_dtype"])
			if res, ok := snap.Info["kv_cache_dtype_resolved"]; ok {
				kv += "(" + fmt.Sprint(res) + ")"
			}
			c.configDesc[snap.ConfigKey] = fmt.Sprintf("kv_cache_dtype=%s quantization=%v model=%v",
				kv, snap.Info["quantization"], snap.Info["model_path"])
		}
	}
}

// addShown adds a log tail's lines to its pane's ring, sanitised, each
// prefixed by tag. A line the splitter cut says so at its end. After the
// lines of a poll that jumped past a burst comes a line saying so: after
// them, not before, so that the pane, which shows the ring's end, shows it.
func addShown(r *snapshot.Ring, up remote.TailUpdate, tag string) {
	r.AddEach(len(up.Lines), func(i int) string {
		l := up.Lines[i]
		s := tag + parse.SanitizeLineString(l.Text, 4096)
		if l.Truncated {
			s += fmt.Sprintf(" … line cut at %d bytes", len(l.Text))
		}
		return s
	})
	if up.Skipped > 0 {
		r.Add(fmt.Sprintf("%s… skipped %s: the log grew faster than a poll reads; the lines above are its newest", tag, snapshot.FormatBytes(up.Skipped)))
	}
}
