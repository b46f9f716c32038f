package digest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// workerNow is the worker as status judges it (parse.JudgeWorker), from
// what the host holds now: worker.json's pid if it lives, else a process
// writing a category's raw_responses.jsonl (that category is the one it
// works on: a buffered stdout leaves the log empty), else one writing the
// worker log (the log's last header's category). cat is the category it
// is (or was last) on.
func (d *digester) workerNow() (cat string, f parse.WorkerFacts) {
	ws := d.worker
	f = parse.WorkerFacts{Known: d.o.Alive != nil, Finished: d.script.finished, Ran: ws != nil || !d.logTime.IsZero()}
	if len(d.took) > 0 {
		cat = d.took[len(d.took)-1]
	}
	if ws != nil {
		f.PID, cat = ws.PID, ws.Category
		f.Phase, f.JSONError, f.Failed = ws.State, ws.Error, ws.FailedCategories()
		if d.o.Alive != nil && ws.PID > 0 && !finalPhase(ws.State) {
			if alive, known := d.o.Alive(ws.PID); known && alive {
				f.Alive = true
				return cat, f
			}
		}
	}
	if pid, c := d.rawWriter(); pid > 0 {
		f.Alive, f.PID, f.Known = true, pid, true
		return c, f
	}
	if d.o.Writers != nil {
		if pids, known := d.o.Writers(filepath.Join(d.o.Root, filepath.FromSlash(parse.WorkerLogPath))); known && len(pids) > 0 {
			f.Alive, f.PID, f.Known = true, pids[0], true
			return cat, f
		}
	}
	if ws == nil && d.note.PID != 0 && !d.workerPID(d.note.PID) {
		f.PID = d.note.PID
	}
	f.Killed = f.PID > 0 && (d.byYou[f.PID] || d.note.PID == f.PID) || d.script.took && d.script.killed
	return cat, f
}

// ProcFrozen reads /proc/PID/stat: the process is stopped (T) or traced
// (t).
func ProcFrozen(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')') // COMM may hold spaces and parentheses
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't')
}

// rawWriter is a process that has a category's raw_responses.jsonl open
// for writing, and that category (0: none, or the host cannot tell).
func (d *digester) rawWriter() (pid int, cat string) {
	if d.o.Writers == nil {
		return 0, ""
	}
	for _, c := range d.s.Categories {
		if pids, known := d.o.Writers(filepath.Join(d.o.Root, parse.PreparedDir, c.Name, parse.RawFile)); known && len(pids) > 0 {
			return pids[0], c.Name
		}
	}
	return 0, ""
}

func finalPhase(p string) bool {
	return p == parse.WorkerDone || p == parse.WorkerFailed || p == parse.WorkerStopped
}

// judgeCategories gives each category its state by the dashboard's judges
// (parse.JudgeCategory, then Stalled on the one worked on), and an ETA
// only to a running one: a category nobody works on, or one stalled, has
// work left and no time to it.
func (d *digester) judgeCategories() {
	cat, f := d.workerNow()
	worker, reason, byYou := parse.JudgeWorker(f)
	d.s.WorkerState, d.s.WorkerCategory = worker, cat
	for i := range d.s.Categories {
		c := &d.s.Categories[i]
		if c.Error != "" {
			continue
		}
		acc := d.s.byName[c.Name]
		facts := parse.CategoryFacts{Done: c.Records, Target: c.Target, TargetRaised: acc.raised,
			BudgetReached: c.TokenBudget > 0 && c.Tokens >= c.TokenBudget, JSONState: acc.jsonState,
			Current: c.Name == cat, Worker: worker, WorkerReason: reason, ByYou: byYou}
		c.State, c.Reason = parse.JudgeCategory(facts)
		if c.State == parse.CatRunning {
			var since time.Time
			if ws := d.worker; ws != nil && ws.Category == c.Name && f.Alive && ws.PID == f.PID {
				since = ws.CategorySince
			}
			if quiet, over := parse.Stalled(d.o.Now, parse.QuietSince(acc.rawAt, since, false), d.o.StallAfter); over {
				c.State, c.Reason = parse.JudgedStalled, parse.StallReason(quiet, 0)
				d.s.WorkerState = parse.JudgedStalled // the worker is stalled when its category is, as status says
			}
		}
		if c.State == parse.CatRunning && d.o.Frozen != nil && d.o.Frozen(f.PID) {
			c.Reason = parse.FrozenReason
		}
		c.ETASec = nil
		if left := c.Left(); parse.ClaimsRate(c.State) && c.Reason == "" && left > 0 && c.RatePerHour > 0 {
			eta := float64(left) / c.RatePerHour * 3600
			c.ETASec = &eta
		}
	}
}
