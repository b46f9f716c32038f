package counts

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// Inputs are the other parts' judgements this poll that a category's
// reads, each made before it (the Watcher's judge): the worker (before its
// stall), the host's server state and the servers' eras, worker.json as
// liveness read it, and what the worker log says.
type Inputs struct {
	Worker snapshot.Worker
	Server snapshot.ServerState
	Eras   []parse.Era
	WJSON  *parse.WorkerState
	Log    Log
}

// Log is what the worker log says of the job, as the categories read it:
// a value the Watcher hands over, never the log's part itself.
type Log struct {
	Current    string    // category of the latest "Processing:" line
	Prev       string    // the category of the header before it ("" if none was read)
	HeaderAt   time.Time // when that header was read as it was written (zero: history from a first read)
	HeaderOnly bool      // only the lines written with the header since it: the worker just switched
	LastLine   time.Time // when the log last grew
}

// Judge judges every category, in order, on the inputs, and keeps them
// (and their files' mtimes) for View and the events; then the classes'
// rates and the pipeline's ETA, which read only these judgements.
func (k *Set) Judge(in Inputs, now time.Time) {
	k.judge(in, now)
	k.noteClassRates()
	k.judgeETA()
}

func (k *Set) judge(in Inputs, now time.Time) {
	k.shown = make([]snapshot.Category, 0, len(k.order))
	k.shownAt = k.shownAt[:0]
	k.jsByName = nil
	if wjson := in.WJSON; wjson != nil { // by name, once: a scan of worker.json per category was n² (50,000 of each)
		k.jsByName = make(map[string]*parse.CategoryState, len(wjson.Categories))
		for i := range wjson.Categories {
			k.jsByName[wjson.Categories[i].Name] = &wjson.Categories[i] // the last of a name, as the scan found
		}
	}
	for _, n := range k.order {
		c := k.cats[n]
		k.shown = append(k.shown, k.judgeCat(c, in, now))
		k.shownAt = append(k.shownAt, c.mtime)
	}
}

// View is the categories as this poll judged them (a copy).
func (k *Set) View() []snapshot.Category { return append([]snapshot.Category(nil), k.shown...) }

// judgeCat decides a category's figures and state: the one place a
// state is decided; status, --follow, the dashboard and the fleet row all
// read it from the Snapshot. It keeps what the next poll's judgement
// needs (when it became current, its stall).
func (k *Set) judgeCat(c *catState, in Inputs, now time.Time) snapshot.Category {
	wk, wjson := in.Worker, in.WJSON
	v := snapshot.Category{Name: c.name, Class: c.class, Done: c.lines, Errors: c.errLines, TokenBudget: c.budget, Rates: c.rates.Values()}
	if !c.lastGrowth.IsZero() {
		t := c.lastGrowth.UTC()
		v.LastGrowth = &t
	}
	js := k.jsByName[c.name]
	judgeTarget(c, js, wjson, &v)
	countFigures(c, js, wjson != nil && c.scanVoidPID != 0 && c.scanVoidPID == wjson.PID, &v)
	tokenFigures(c, js, &v)
	k.summingFigure(c, &v)
	v.Gate = k.gateVerdict(c)
	v.OverCap = parse.OverCaps(v.Done, int64(c.maxSamples), v.CompletionTokens, v.TokenBudget)
	provenance(c, &v, in.Eras)
	v.Spend = parse.SpendOf(&c.tallies, k.manifest.Cost)
	runTallies(c, &v)
	current := wk.Category == c.name
	live := current && snapshot.Alive(wk.State)
	if live && js != nil {
		v.Window, v.WindowReason = js.Window, js.WindowReason
	}
	if js != nil {
		v.Yielded = js.Yielded
	}
	k.followCurrent(c, live, wk, wjson, in.Log)
	st, reason := parse.JudgeCategory(categoryFacts(v, c, js, wk, current))
	v.State, v.Reason = snapshot.CategoryState(st), reason
	if v.State == snapshot.StateUnknown {
		v.Reason = c.countErr // never counted: neither pending nor running is known
	}
	k.stall(c, &v, now)
	// ask for its records' span next poll when rate finds no fresher
	// witness, or when it is written to and no worker is known on it yet (a
	// writer found a poll later is then judged with its span at once)
	c.spanAsk = (v.State == snapshot.StatePartial || v.State == snapshot.StatePending) && !c.mtime.IsZero() &&
		now.Sub(c.mtime) < parse.StallLimit(k.stallAfter)
	if why := unserved(v, c, wk, in.Server, now); why != "" {
		v.Reason = why // no rate and no ETA until it is back; the stall clock runs on
	} else if parse.ClaimsRate(string(v.State)) {
		v.RatePerMin = k.rate(c, js, wjson, in.Log, now)
		v.TokPerSec = tokPerSec(v)
		v.ETASeconds = eta(v)
	}
	if len(c.configs) > 1 {
		v.Warnings = append(v.Warnings, fmt.Sprintf("records from %d server configurations: %s → %s",
			len(c.configs), c.configDesc[c.configs[0]], c.configDesc[c.configs[len(c.configs)-1]]))
	}
	return v
}

// judgeTarget decides the category's target from its witnesses (prompts,
// max samples, the log, worker.json), with a warning when they disagree.
func judgeTarget(c *catState, js *parse.CategoryState, wjson *parse.WorkerState, v *snapshot.Category) {
	tf := parse.TargetFacts{Prompts: c.promptLines, PromptsAt: c.promptsAt, MaxSamples: c.maxSamples, Log: c.logTarget}
	if js != nil {
		tf.Worker, tf.WorkerRead = js.Target, wjson.StartedAt
	}
	var targetNote string
	v.Target, v.TargetSource, targetNote = parse.JudgeTarget(tf)
	if targetNote != "" {
		v.Warnings = append(v.Warnings, c.name+": "+targetNote)
	}
}

// followCurrent keeps since when the live worker has been on the category;
// a category no live worker is on forgets it.
func (k *Set) followCurrent(c *catState, live bool, wk snapshot.Worker, wjson *parse.WorkerState, lg Log) {
	switch {
	case !live:
		c.currentSince, c.currentKnown, c.currentWeak = time.Time{}, false, false
		c.win.Reset() // a later run is measured on its own
	case !c.currentKnown || c.currentWeak:
		// judged on the evidence at whatever poll the worker is first seen on it
		t, weak := k.becameCurrent(c, wk, wjson, lg)
		if weak && c.currentWeak && c.currentSince.Before(t) {
			t = c.currentSince // at least as old as the log's last line when first seen
		}
		c.currentSince, c.currentWeak, c.currentKnown = t, weak, !t.IsZero()
	}
}

// categoryFacts are the witnesses parse.JudgeCategory decides the state on.
func categoryFacts(v snapshot.Category, c *catState, js *parse.CategoryState, wk snapshot.Worker, current bool) parse.CategoryFacts {
	f := parse.CategoryFacts{Done: v.Done, Target: v.Target, TargetRaised: js != nil && v.Target > int64(js.Target),
		BudgetReached: budgetReached(v), LogSkipped: c.logSkipped, Unread: unread(c), Current: current,
		Worker: string(wk.State), WorkerReason: wk.Reason, ByYou: wk.ByYou}
	if js != nil {
		f.JSONState = js.State
	}
	if wk.State == snapshot.WorkerStalled {
		f.Worker = parse.JudgedRunning // judged before its stall: stalled is alive
	}
	return f
}

// unserved says why a running category is not being served, "" if it is:
// the worker waits for the server (worker.json), or the server is down or
// crashed and the file has not grown for 30 s (records still arriving mean
// the server serves, whatever the probe of a wrong URL says).
func unserved(v snapshot.Category, c *catState, wk snapshot.Worker, server snapshot.ServerState, now time.Time) string {
	switch {
	case v.State != snapshot.StateRunning:
		return ""
	case wk.Frozen:
		return parse.FrozenReason
	case wk.Phase == parse.WorkerWaitingServer:
		return "the worker waits for the server"
	case (server == snapshot.ServerDown || server == snapshot.ServerCrashed) && now.Sub(c.lastGrowth) > 30*time.Second:
		return "the server is " + string(server)
	}
	return ""
}

// stall marks the category being worked on as stalled when its JSONL has
// not grown for longer than the stall limit (parse.StallLimit: the
// setting alone, as the report and a one-shot status have it). Only
// growth clears a stall; log lines do not count.
func (k *Set) stall(c *catState, v *snapshot.Category, now time.Time) {
	if v.State != snapshot.StateRunning {
		c.stalled = false // not being worked on: nothing to stall
		return
	}
	limit := parse.StallLimit(k.stallAfter)
	// quiet since the last record, or since the category became current
	// (its file may hold records from an earlier run)
	last := parse.QuietSince(c.lastGrowth, c.currentSince, c.currentWeak)
	c.quietFrom = last
	since, over := parse.Stalled(now, last, limit)
	switch {
	case !c.stalled && over:
		c.stalled = true
		// stamped when it became a stall and keyed by the last growth, so a
		// dashboard opened during the stall records the same stall once
		at := last.Add(limit)
		k.tl.Add(snapshot.Event{Time: at.UTC(), Kind: "stall_start", Category: c.name,
			Text: parse.SanitizeString(fmt.Sprintf("%s: no new records for %s (since %s)", c.name, snapshot.FormatDuration(limit), last.Local().Format("01-02 15:04:05"))),
			Key:  fmt.Sprintf("stall_start|%s|%d", c.name, last.UnixNano())})
	case c.stalled && !over:
		c.stalled = false
		c.win.Reset() // the pace from before the stall is not today's
		k.tl.Note(now, "stall_end", c.name, fmt.Sprintf("%s: records flow again", c.name))
	}
	if c.stalled {
		v.State, v.Reason = snapshot.StateStalled, parse.StallReason(since, v.Errors)
	}
}

// workLeft: a category in state still has records to do that a run will
// take up (a stalled or unknown one gives no ETA).
func workLeft(state snapshot.CategoryState) bool {
	switch state {
	case snapshot.StateRunning, snapshot.StatePending, snapshot.StatePartial, snapshot.StateStopped, snapshot.StateDied:
		return true
	}
	return false
}

// pipelineETA adds the running category's ETA and, for the categories
// still to come (and a running one with no rate of its own yet), their
// remaining records at their own class's rate: measured this session, else
// the rate the class last finished at (the timeline's category_done). A
// class with neither makes no guess: the figure is then the part that is
// known and the classes that are not (ETAPart: "≥12m + LONG unmeasured").
// A stalled or unknown category, a server that is down, or no category
// running give nothing: the screen shows "?".
func (k *Set) judgeETA() {
	k.eta, k.etaPart = k.pipelineETA(k.shown)
}

func (k *Set) pipelineETA(cats []snapshot.Category) (*float64, *snapshot.ETAPart) {
	var total float64
	var unmeasured []string
	running := false
	for _, c := range cats {
		switch {
		case snapshot.Final(c.State) || c.Done >= c.Target:
		case c.State == snapshot.StateRunning && c.ETASeconds != nil:
			total += *c.ETASeconds
			running = true
		case c.State == snapshot.StateRunning && c.Reason != "":
			return nil, nil // the server is down: nothing moves
		case workLeft(c.State):
			running = running || c.State == snapshot.StateRunning
			if r := k.classRate(c.Class); r > 0 {
				total += float64(c.Target-c.Done) / r * 60
			} else if !slices.Contains(unmeasured, c.Class) {
				unmeasured = append(unmeasured, c.Class)
			}
		default:
			return nil, nil // stalled, unknown
		}
	}
	switch {
	case !running:
		return nil, nil
	case len(unmeasured) > 0:
		return nil, &snapshot.ETAPart{Seconds: total, Unmeasured: unmeasured}
	}
	return &total, nil
}

// eta is the time to the sample cap or the token budget, whichever is first.
func eta(v snapshot.Category) *float64 {
	if v.State != snapshot.StateRunning || v.RatePerMin <= 0 || v.Target <= v.Done {
		return nil
	}
	secs := float64(v.Target-v.Done) / v.RatePerMin * 60
	if v.TokenBudget > 0 && v.CompletionTokens != nil && v.TokPerSec != nil && *v.TokPerSec > 0 {
		secs = math.Min(secs, math.Max(0, float64(v.TokenBudget-*v.CompletionTokens) / *v.TokPerSec))
	}
	return &secs
}

// CrossCheck runs the checks users make by eye, on the categories judged
// and the worker wk (its stall judged): each disagreement is kept on its
// category, and an event when it is new.
func (k *Set) CrossCheck(wk snapshot.Worker, now time.Time, wjson *parse.WorkerState, logLast time.Time) {
	for i := range k.shown {
		cv := &k.shown[i]
		k.sourceChecks(wk, cv, k.cats[cv.Name], now, wjson, logLast)
	}
}
