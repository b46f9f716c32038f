package digest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
		if d.jsonAlive(ws) {
			f.Alive = true
			return cat, f
		}
	}
	if pid, c := d.rawWriter(); pid > 0 {
		f.Alive, f.PID, f.Known = true, pid, true
		return c, f
	}
	if pid, ok := d.logWriter(); ok {
		f.Alive, f.PID, f.Known = true, pid, true
		return cat, f
	}
	if ws == nil && d.note.PID != 0 && !d.workerPID(d.note.PID) {
		f.PID = d.note.PID
	}
	f.Killed = f.PID > 0 && (d.byYou[f.PID] || d.note.PID == f.PID) || d.script.took && d.script.killed
	return cat, f
}

// jsonAlive: the host says the pid worker.json names lives, and
// worker.json's phase is not a final one.
func (d *digester) jsonAlive(ws *parse.WorkerState) bool {
	if d.o.Alive == nil || ws.PID <= 0 || finalPhase(ws.State) {
		return false
	}
	alive, known := d.o.Alive(ws.PID)
	return known && alive
}

// logWriter is the first process the host says writes the worker log;
// ok is false when there is none, or the host cannot tell.
func (d *digester) logWriter() (pid int, ok bool) {
	w, _ := d.writersOf()
	pids := w[filepath.Join(d.o.Root, filepath.FromSlash(parse.WorkerLogPath))]
	if len(pids) == 0 {
		return 0, false
	}
	return pids[0], true
}

// writersOf are the processes writing the worker log and each category's
// records, asked of the host once; known is false when it was not asked
// or cannot tell.
func (d *digester) writersOf() (pids map[string][]int, known bool) {
	if d.o.Writers == nil {
		return nil, false
	}
	if !d.writersAsked {
		paths := []string{filepath.Join(d.o.Root, filepath.FromSlash(parse.WorkerLogPath))}
		for _, c := range d.s.Categories {
			paths = append(paths, filepath.Join(d.o.Root, parse.PreparedDir, c.Name, parse.RawFile))
		}
		d.writers, d.writersKnown = d.o.Writers(paths...)
		d.writersAsked = true
	}
	return d.writers, d.writersKnown
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

// ProcStarted is when process pid started: its start in clock ticks
// (/proc/PID/stat's 22nd field, at 100 a second, as the pipeline reads
// it) after the boot (/proc/stat's btime). Zero: unknown.
func ProcStarted(pid int) time.Time {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}
	}
	i := bytes.LastIndexByte(st, ')')
	if i < 0 {
		return time.Time{}
	}
	f := strings.Fields(string(st[i+1:])) // from the state, the 3rd field
	if len(f) < 20 {
		return time.Time{}
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return time.Time{}
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			if boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(boot, 0).Add(time.Duration(ticks) * 10 * time.Millisecond)
			}
		}
	}
	return time.Time{}
}

// rawWriter is a process that has a category's raw_responses.jsonl open
// for writing, and that category (0: none, or the host cannot tell).
func (d *digester) rawWriter() (pid int, cat string) {
	w, _ := d.writersOf()
	for _, c := range d.s.Categories {
		if pids := w[filepath.Join(d.o.Root, parse.PreparedDir, c.Name, parse.RawFile)]; len(pids) > 0 {
			return pids[0], c.Name
		}
	}
	return 0, ""
}

func finalPhase(p string) bool {
	return p == parse.WorkerDone || p == parse.WorkerFailed || p == parse.WorkerStopped
}

// judgeCategories gives each category its state by the dashboard's judges
// (parse.JudgeCategory, then the stall on the one worked on: when it
// became current, its limit, its reason with its errors, all by parse's
// judges with the pipeline's witnesses), and an ETA only to a running one
// whose rate is witnessed (parse.WitnessedRate): a category nobody works
// on, one stalled, or one whose rate no first look can see has work left
// and no time to it.
func (d *digester) judgeCategories() {
	cat, f := d.workerNow()
	worker, reason, byYou := parse.JudgeWorker(f)
	d.s.WorkerState, d.s.WorkerCategory = worker, cat
	limit := parse.StallLimit(d.o.StallAfter)
	for i := range d.s.Categories {
		c := &d.s.Categories[i]
		if c.Error != "" {
			continue
		}
		acc := d.s.byName[c.Name]
		js := d.workerCat(c.Name)
		facts := parse.CategoryFacts{Done: c.Done, Target: c.Target, TargetRaised: acc.raised,
			BudgetReached: c.TokenBudget > 0 && c.Tokens >= c.TokenBudget, JSONState: acc.jsonState,
			Current: c.Name == cat, Worker: worker, WorkerReason: reason, ByYou: byYou}
		c.State, c.Reason = parse.JudgeCategory(facts)
		tokens := c.Tokens
		c.OverCap = parse.OverCaps(c.Done, acc.maxSamples, &tokens, c.TokenBudget)
		c.Gate = parse.JudgeGate(acc.gate, d.gate)
		if acc.outcomes.Records > 0 {
			o := acc.outcomes
			c.Outcomes = &o
		}
		if c.State == parse.CatRunning {
			since, weak := parse.BecameCurrent(d.currentFacts(c.Name, f))
			if quiet, over := parse.Stalled(d.o.Now, parse.QuietSince(acc.rawAt, since, weak), limit); over {
				c.State, c.Reason = parse.JudgedStalled, parse.StallReason(quiet, d.errors(c.Name, acc, js))
				d.s.WorkerState = parse.JudgedStalled // the worker is stalled when its category is, as status says
			}
		}
		if c.State == parse.CatRunning && d.o.Frozen != nil && d.o.Frozen(f.PID) {
			c.Reason = parse.FrozenReason
		}
		c.ETASec = nil
		if left := c.Left(); parse.ClaimsRate(c.State) && c.Reason == "" && left > 0 {
			if perMin, ok := parse.WitnessedRate(d.rateFacts(c.Name, js, limit)); ok && perMin > 0 {
				eta := float64(left) / perMin * 60
				c.ETASec = &eta
			}
		}
	}
}

// workerCat is worker.json's entry for the category (nil: none).
func (d *digester) workerCat(name string) *parse.CategoryState {
	if d.worker == nil {
		return nil
	}
	var js *parse.CategoryState
	for i := range d.worker.Categories {
		if d.worker.Categories[i].Name == name {
			js = &d.worker.Categories[i] // the last of a name, as status takes it
		}
	}
	return js
}

// currentFacts are the witnesses of when the category became current, as
// the pipeline gathers them (pipeline/counts/rate.go): worker.json's when its
// live worker is on it, else the log's last header (the log's time,
// whether it ends with the header, the previous category's last record).
// A header is never read as it is written here.
func (d *digester) currentFacts(name string, f parse.WorkerFacts) parse.CurrentFacts {
	var cf parse.CurrentFacts
	if ws := d.worker; ws != nil && ws.Category == name && f.Alive && ws.PID == f.PID {
		cf.JSONSince = ws.CategorySince
		if cf.JSONSince.IsZero() {
			cf.JSONSince = ws.StartedAt
		}
	}
	if n := len(d.took); n > 0 && d.took[n-1] == name && !d.logTime.IsZero() {
		cf.LogAt, cf.HeaderOnly = d.logTime, d.lf.headerOnly
		if p := d.lf.prev; p != "" && p != name {
			if prev := d.s.byName[p]; prev != nil && !d.lf.cat(p).skipped {
				cf.PrevLast = prev.rawAt
			}
		}
		if d.o.Started != nil && f.PID > 0 {
			cf.WriterStart = d.o.Started(f.PID)
		}
	}
	return cf
}

// errors is the category's ERR as status counts it (parse.CategoryErrors).
func (d *digester) errors(name string, acc *catAcc, js *parse.CategoryState) int64 {
	ef := parse.ErrorFacts{ErrLines: acc.errLines}
	if lc := d.lf.cats[name]; lc != nil {
		ef.LogFailures = lc.failures
		if lc.progress.Kind == parse.WProgress {
			ef.LogProgress = int64(lc.progress.Errors)
		}
	}
	if js != nil {
		ef.JSONErrors, ef.JSONFailed = int64(js.Errors), js.FailedPrompts
	}
	return parse.CategoryErrors(ef)
}

// rateFacts are the witnesses of a running category's rate a first look
// has, as the pipeline gathers them: worker.json's figure and time, the
// log's last progress line since its header and the log's time, and the
// times of the file's last records.
func (d *digester) rateFacts(name string, js *parse.CategoryState, limit time.Duration) parse.RateFacts {
	rf := parse.RateFacts{Now: d.o.Now, Limit: limit}
	rf.Records = recordSpan(filepath.Join(d.o.Root, parse.PreparedDir, name, parse.RawFile), d.o.Loc, d.o.Now)
	if js != nil {
		rf.WorkerRate, rf.WorkerAt = js.Rate, d.worker.UpdatedAt
	}
	if n := len(d.took); n > 0 && d.took[n-1] == name {
		if lc := d.lf.cats[name]; lc != nil && lc.progress.Kind == parse.WProgress {
			rf.LogRate, rf.LogAt = lc.progress.ReqPerSec*60, d.logTime
		}
	}
	return rf
}

// captureForecast is status's forecast of the next stage's disk from
// every record read: prompt and completion tokens (at least, where some
// records' counts are unknown), against the root's free disk now.
func (d *digester) captureForecast() *parse.CaptureForecast {
	var tokens int64
	partial := false
	for _, c := range d.s.Categories {
		if c.Error != "" {
			partial = true
			continue
		}
		tokens += c.Tokens
		partial = partial || c.TokensUnknown > 0
		if o := c.Outcomes; o != nil {
			tokens += o.PromptTokens
			partial = partial || o.PromptRecords < o.Records
		}
	}
	var free *int64
	var st syscall.Statfs_t
	if syscall.Statfs(d.o.Root, &st) == nil {
		bs := st.Frsize // df's "Avail": available blocks of f_frsize
		if bs == 0 {
			bs = st.Bsize
		}
		f := int64(st.Bavail) * bs
		free = &f
	}
	return parse.ForecastCapture(d.capture, tokens, partial, free)
}
