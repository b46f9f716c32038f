// Package counts is the categories' part of a poll (Set): which categories
// there are (pipeline.toml, prepared/*/), their files' line counts and the
// tokens, outcomes and gate of their records, their runs, folded into what
// the Watcher's judge has each category judged by parse's state tables.
package counts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/display"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
)

// Set is the categories' part of a poll: the manifest and prepared/*/
// that name them, the line counts of their files with the tokens of the
// bytes those counts read (and the sums the host ran for the rest), and
// their runs.jsonl; with what each category's log lines and worker.json
// say of it, kept per category (catState) between polls. Tokens fold in
// tokens.go, rates in rate.go; a category's view is judged in catview.go;
// the Watcher reaches it through set.go.
type Set struct {
	lay        parse.Layout
	history    int                // samples kept per category
	stallAfter time.Duration      // Options.StallAfter: a log rate older than it is none
	tl         *timeline.Timeline // category_done events give a class its rate
	// promptsOnHost: Config.PromptsOnHost
	promptsOnHost bool

	cats        map[string]*catState
	order       []string
	manifest    parse.Manifest
	haveMan     bool
	manView     bool               // pipeline.toml had a view section left out: read again on each full poll
	manErr      error              // why pipeline.toml could not be read or parsed (nil: read, or none)
	thens       map[string]*Job    // by category: the token sums the batch's counts on the host ran
	agentCounts bool               // the counters count on the host above AgentRemoteAbove
	onePoll     bool               // a one-shot status (Options.OnePoll): a first attach counts on the host too
	within      time.Duration      // Config.SumWithin
	classRates  map[string]float64 // newest measured rate per class (per minute)
	spanMark    string             // ends each file's bytes in the fallback's records' span (recspan.go)
	zone        *time.Location     // the host's zone, for the records' zone-less times

	runsDue map[*catState]bool // runs.jsonl to read in this poll though it is not full (newRuns)

	// this poll's judgement (Judge, CrossCheck), which View reads
	shown   []snapshot.Category // each category, in order
	shownAt []time.Time         // each one's file mtime (the events' done keys)
	// worker.json's categories by name, for this judgement
	jsByName map[string]*parse.CategoryState
	eta      *float64
	etaPart  *snapshot.ETAPart
}

func (k *Set) cat(name string) *catState {
	c, ok := k.cats[name]
	if !ok {
		c = k.newCat(name)
		k.cats[name] = c
		k.order = append(k.order, name)
	}
	return c
}

// newCat is a category's state before its first poll.
func (k *Set) newCat(name string) *catState {
	l := k.lay
	c := &catState{name: name, class: "SHORT",
		raw:     remote.NewCounter(l.Raw(name)),
		errs:    remote.NewCounter(l.Errors(name)),
		prompts: remote.NewCounter(l.Prompts(name)),
		runs:    remote.NewTail(l.Runs(name)),
		rates:   display.NewSamples(k.history)}
	c.runs.StartBack = 16 << 20
	c.raw.OnRead = c.tok.onRead // tokens from the bytes the count reads anyway
	// prompts.jsonl is counted, never read: its count runs on the host
	// (in the fallback's one wc of a poll's counts, no exec more), not a
	// whole 60 KB file of a thousand prompts sent for its newlines
	if k.promptsOnHost {
		c.prompts.RemoteAbove = AgentRemoteAbove
	}
	if k.agentCounts {
		// through the agent a first attach counts on the host: its small
		// files (errors.jsonl) do not cross the link to be counted. A one-shot
		// status's records too, their tokens answered by its cold sum
		// (coldSumArgv) in the same request; a dashboard's first screen
		// reads a small records file, as a file-by-file poll does (its
		// tokens at once)
		counted := []*remote.Counter{c.errs, c.prompts}
		if k.onePoll {
			counted = append(counted, c.raw)
		}
		for _, n := range counted {
			n.RemoteAbove = AgentRemoteAbove
		}
	}
	return c
}

// FindAsks are Discover's handles in a poll's batch.
type FindAsks struct {
	man   *remote.CatAsk    // pipeline.toml
	trust *remote.ExecAsk   // its owner and mode (manifestTrust)
	globs []*remote.GlobAsk // parse.CategoryGlobs' patterns, in order
}

// Discover finds categories from the manifest and prepared/*/ folders;
// parsed: pipeline.toml was read and parsed by this call. What the poll's
// batch answered (asks) is read from it; the rest from rd.
func (k *Set) Discover(ctx context.Context, rd remote.Host, asks FindAsks) (parsed bool, err error) {
	if !k.haveMan || k.manView {
		mp := k.lay.Manifest()
		cat, ok := asks.man.Result()
		data, err := cat.Data, cat.Err
		if !ok {
			data, err = rd.ReadAt(ctx, mp, 0, 1<<20)
		}
		k.manErr = nil
		switch {
		case err == nil:
			m, perr := parse.ParseManifest(data)
			k.manView = perr != nil // read again on every full poll, until it parses: a fix is seen
			if !parse.ManifestUsable(perr) {
				k.manErr = fmt.Errorf("%s: %w", mp, perr)
				break
			}
			var view *parse.ViewSectionError
			if errors.As(perr, &view) { // a view section left out: the classes, caps and budgets stand
				view.Path, k.manErr = mp, view
			}
			if m.Server != "" || len(m.Servers) > 0 {
				k.manErr = errors.Join(k.manErr, k.distrust(ctx, rd, mp, &m, asks.trust))
			}
			k.manifest = m
			k.haveMan = true
			parsed = true
		case errors.Is(err, fs.ErrNotExist):
			k.haveMan = true
		case remote.IsFileError(err):
			// the host answered and the file is bad (EACCES, a FIFO, a
			// directory): said in every view, and the categories are
			// still found from prepared/*/
			k.manErr = fmt.Errorf("%s", remote.FileErrText(mp, err))
		default:
			return false, err
		}
	}
	for _, s := range k.manifest.Categories {
		c := k.cat(s.Name)
		if s.Class != "" {
			c.class = s.Class
		}
		c.budget, c.maxSamples = s.TokenBudget, s.MaxSamples
	}
	found, err := k.find(ctx, rd, asks.globs)
	if err != nil {
		return false, err
	}
	for _, n := range found {
		k.cat(n)
	}
	return parsed, nil
}

// catState is what the watcher knows of one category between polls.
type catState struct {
	name, class         string
	budget              int64
	maxSamples          int
	raw, errs, prompts  *remote.Counter
	runs                *remote.Tail
	lines, errLines     int64
	promptLines         int64
	promptsAt           time.Time // prompts.jsonl's mtime (appended after the worker read it: JudgeTarget)
	known               bool
	lastGrowth          time.Time
	mtime               time.Time
	win                 parse.RateWindow // growths seen while it is worked on: the rate
	lastSample          time.Time
	rates               *display.Samples
	stalled             bool
	currentSince        time.Time // when it became the category being worked on (zero: unknown, judge by growth)
	currentKnown        bool      // currentSince has been judged for this spell of work
	currentWeak         bool      // currentSince is only the log's last line: the category is at least that old
	quietFrom           time.Time // the stall clock's start: the last growth, or currentSince if later
	configs             []string  // distinct server config keys, in order seen
	configDesc          map[string]string
	logTarget           int
	logResumed, logToGo int
	logProgress         parse.WorkerLine
	logProgressAt       time.Time
	logProgressFresh    bool // read as it was written (not history from a first read)
	logSkipped          bool
	logFailures         int64            // failures the log reported since its header (parse.FailureTally)
	countErr            string           // why the last count failed (countError)
	rawFailed           bool             // raw_responses.jsonl's last count failed (keepsLastCount)
	scanVoidPID         int              // the worker whose resume-scan figures the file outgrew (rewritten since)
	tok                 tokAcc           // tokens and runs of its records, from the bytes the count reads (tokens.go)
	runLines            []parse.RunLine  // runs.jsonl, one per run (provenance.go)
	tallies             parse.Tallies    // runs.jsonl's tally lines, each run's last (spend.go)
	runsAsked           map[string]bool  // runs its records name that runs.jsonl was read again for (newRun)
	disagree            map[string]bool  // sources that disagree with the file (crosscheck.go)
	span                parse.RecordSpan // its last records' times, this poll's (recspan.go)
	spanAsk             bool             // running with no fresher witness of its rate: ask for span
}

// NoteWorkerJSON takes the categories worker.json names, with their class
// and budget.
func (k *Set) NoteWorkerJSON(st *parse.WorkerState) {
	for _, c := range st.Categories {
		cs := k.cat(c.Name)
		if c.Class != "" {
			cs.class = c.Class
		}
		if c.TokenBudget > 0 {
			cs.budget = c.TokenBudget
		}
	}
}

// FoldLogLine folds what a worker log line says of a category: its class,
// when it became current, its target, skip and progress, its failures.
func (k *Set) FoldLogLine(l parse.WorkerLine, cur string, failed bool, now time.Time, watching, fresh bool) {
	if c, ok := k.cats[cur]; ok && failed {
		c.logFailures++
	}
	switch l.Kind {
	case parse.WProcessing:
		if c, ok := k.cats[l.Category]; ok {
			if l.Class != "" {
				c.class = l.Class
			}
			if watching {
				c.currentSince, c.currentKnown = now, true // a (re)start reached it while we watch: the stall clock starts now
			}
			c.logProgress, c.logProgressFresh = parse.WorkerLine{}, false // the last run's figures are not this run's
			c.logFailures = 0
		}
	case parse.WPrompts, parse.WResume:
		if c, ok := k.cats[l.Category]; ok {
			c.logTarget, c.logResumed, c.logToGo = l.Prompts, l.Resumed, l.ToGo
		}
	case parse.WSkip:
		if c, ok := k.cats[l.Category]; ok {
			c.logSkipped = true
		}
	case parse.WProgress:
		if c, ok := k.cats[cur]; ok {
			c.logProgress, c.logProgressAt, c.logProgressFresh = l, now, fresh
		}
	}
}

// fold takes the new line counts and updates growth, rates and stalls.
func (ct *Set) Fold(res remote.PollResult, now time.Time, wjson *parse.WorkerState) {
	k := 0
	for _, n := range ct.order {
		c := ct.cats[n]
		if k+1 >= len(res.Counts) || res.Counts[k].Path != c.raw.Path {
			break // named by worker.json after this poll was built: counted from the next one
		}
		raw, errs := res.Counts[k], res.Counts[k+1]
		k += 2
		var prompts remote.CountUpdate
		if k < len(res.Counts) && res.Counts[k].Path == c.prompts.Path {
			prompts = res.Counts[k]
			k++
		} else {
			prompts = remote.CountUpdate{Lines: c.promptLines}
		}
		c.countErr = countError(c, raw, errs, prompts)
		c.rawFailed = keepsLastCount(c, raw)
		if raw.Reset && c.known && wjson != nil {
			c.scanVoidPID = wjson.PID // rewritten since this worker's resume scan: its extra_lines no longer apply
		}
		if !keepsLastCount(c, raw) {
			ct.foldLines(c, raw, now)
		}
		if errs.Err == nil {
			c.errLines = errs.Lines
		}
		if prompts.Err == nil {
			c.promptLines = prompts.Lines
			if !prompts.Missing && !prompts.Info.ModTime.IsZero() {
				c.promptsAt = prompts.Info.ModTime
			}
		}
	}
}

// foldLines takes in a good count of the category's records: the first
// is history (its growth dated by the file's mtime), the next ones samples.
func (ct *Set) foldLines(c *catState, raw remote.CountUpdate, now time.Time) {
	if !raw.Missing {
		c.mtime = raw.Info.ModTime
	}
	grew := raw.Lines - c.lines
	if !c.known {
		c.known, c.lastGrowth = true, c.mtime // one-shot: the file's own time
	} else {
		ct.sample(c, grew, now)
	}
	c.lines = raw.Lines
}

// sample folds one poll's growth: the rate window (growths only: the first
// poll's count is history, its time unknown), the sparkline's per-poll
// rate, and the last growth for the stall.
func (k *Set) sample(c *catState, grew int64, now time.Time) {
	if grew != 0 {
		c.win.Add(now, c.lines+grew)
	}
	if !c.lastSample.IsZero() {
		if dt := now.Sub(c.lastSample); dt > 0 {
			c.rates.Add(float64(max(grew, 0)) / dt.Minutes())
		}
	}
	c.lastSample = now
	if grew > 0 {
		c.lastGrowth = now
	}
}

// GrewIn says whether this poll's counts found a category file longer than
// the counts know (call it before fold).
func (k *Set) GrewIn(res remote.PollResult) bool {
	raw := make(map[string]int64, len(k.cats)) // a map, not a scan per count: 10,000 categories made it 10^8 compares a poll
	for _, c := range k.cats {
		raw[c.raw.Path] = c.lines
	}
	grew := false
	for _, up := range res.Counts {
		if lines, ok := raw[up.Path]; ok && up.Err == nil && up.Lines > lines {
			grew = true
		}
	}
	return grew
}

// find lists the category folders: from the batch's globs when it
// answered both, else by globbing rd.
func (k *Set) find(ctx context.Context, rd remote.Host, globs []*remote.GlobAsk) ([]string, error) {
	var found [][]string
	for _, g := range globs {
		r, ok := g.Result()
		if !ok {
			break
		}
		if r.Err != nil {
			return nil, r.Err
		}
		found = append(found, r.Paths)
	}
	if len(globs) == 0 || len(found) < len(globs) {
		return parse.FindCategories(k.lay.Root, func(pat string) ([]string, error) { return rd.Glob(ctx, pat) })
	}
	return parse.CategoryNames(found...), nil
}
