package digest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// maxRuns bounds the distinct run ids kept; records of further ones are
// summed under "other" so a hostile file cannot grow memory.
const maxRuns = 500

// catAcc accumulates one category while its records stream by.
type catAcc struct {
	c             *Category
	inWindow      int64
	wFirst, wLast time.Time // the window's first and last finish times
	prevT         time.Time // the latest finish time so far, in file order
	prevRun       string
	seen          bool
	// the witnesses of its state (judge.go): prompts.jsonl's and
	// raw_responses.jsonl's mtimes, worker.json's word for it, and whether
	// prompts appended since worker.json's worker read them raised its target
	promptsAt, rawAt time.Time
	errLines         int64 // errors.jsonl's lines (prompts that failed for good)
	jsonState        string
	raised           bool
	maxSamples       int64           // pipeline.toml's cap on its records (0: none)
	lines            int64           // whole lines of raw_responses.jsonl, blank and bad ones too
	outcomes         parse.Outcomes  // how its records ended
	gate             parse.GateTally // the training-readiness gate's counts
	gateBelow        bool            // the pass rate is below the floor, as of the last record read
	// spans are each run's first and last record here, for the gaps at a
	// run's start and end on the category
	spans map[string]*[2]time.Time
	// minutes are the window's records per minute from its start, for the
	// records an incident cost
	minutes map[int32]int64
	prov    provAcc // its records by run and time, for its provenance (eras.go)
	// cur is the run of the records read last, and curN its records here
	// not yet in its ByCategory: a map's update a record was a tenth of
	// the fold
	cur   *Run
	curID string
	curN  int64
	held  heldSlot // the window's records read in a row in one interval and minute
}

// runOf is the Run of id, as d.run, for a record of the category.
func (acc *catAcc) runOf(d *digester, id string) *Run {
	if acc.cur == nil || id != acc.curID {
		acc.flushRun()
		acc.cur, acc.curID = d.run(id), id
	}
	acc.curN++
	return acc.cur
}

// flushRun adds the records of the run read last to its ByCategory.
func (acc *catAcc) flushRun() {
	if acc.cur == nil || acc.curN == 0 {
		return
	}
	if acc.cur.ByCategory == nil {
		acc.cur.ByCategory = map[string]int64{}
	}
	acc.cur.ByCategory[acc.c.Name] += acc.curN
	acc.curN = 0
}

// categoryNames lists the categories: those status finds under prepared/
// (parse.FindCategories: a symlinked folder too), the manifest's first in
// its order, then the others by name.
func (d *digester) categoryNames() ([]string, error) {
	dirs, err := parse.FindCategories(d.o.Root, filepath.Glob)
	if err != nil {
		return nil, fmt.Errorf("digest: %w", err)
	}
	var names []string
	if data, err := parse.ReadRegular(filepath.Join(d.o.Root, parse.ManifestPath)); err == nil {
		if m, err := parse.ParseManifest(data); parse.ManifestUsable(err) {
			if err != nil { // a view section left out: the rest stands
				d.s.Notes = append(d.s.Notes, err.Error())
			}
			d.specs, d.capture, d.cost, d.gate = map[string]parse.CategorySpec{}, m.Capture, m.Cost, m.Gate
			for _, c := range m.Categories {
				d.specs[c.Name] = c
				if slices.Contains(dirs, c.Name) {
					names = append(names, c.Name)
				}
			}
		} else {
			d.s.Notes = append(d.s.Notes, err.Error())
		}
	}
	for _, n := range dirs {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, nil
}

func (d *digester) readCategories() error {
	names, err := d.categoryNames()
	if err != nil {
		return err
	}
	d.s.Categories = make([]Category, len(names))
	for i, name := range names {
		c := &d.s.Categories[i]
		c.Name = name
		acc := &catAcc{c: c}
		d.s.byName[name] = acc
		if err := d.readCategory(acc); err != nil {
			// one bad file costs its category only, as in status
			*c = Category{Name: name, Error: fileError(err)}
		}
	}
	return nil
}

// fileError is a category's read error as the report shows it: the file's
// name and what is wrong, without the root's path.
func fileError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return filepath.Base(pe.Path) + ": " + pe.Err.Error()
	}
	return strings.TrimPrefix(err.Error(), "digest: ")
}

// readCategory counts prompts, reads the runs and streams the records.
func (d *digester) readCategory(acc *catAcc) error {
	c := acc.c
	dir := filepath.Join(d.o.Root, parse.PreparedDir, c.Name)
	n, _, err := eachLine(filepath.Join(dir, parse.PromptsFile), func(line []byte, _ bool) {
		if len(bytes.TrimSpace(line)) > 0 {
			c.Prompts++
		}
	})
	d.count(n, err)
	if err != nil {
		return err
	}
	if err := d.readRuns(acc, filepath.Join(dir, parse.RunsFile)); err != nil {
		return err
	}
	if fi, err := os.Stat(filepath.Join(dir, parse.PromptsFile)); err == nil {
		acc.promptsAt = fi.ModTime()
	}
	if fi, err := os.Stat(filepath.Join(dir, parse.RawFile)); err == nil {
		acc.rawAt = fi.ModTime()
	}
	if _, _, err := eachLine(filepath.Join(dir, parse.ErrorsFile), func(line []byte, _ bool) {
		if len(bytes.TrimSpace(line)) > 0 {
			acc.errLines++
		}
	}); err != nil {
		acc.errLines = 0 // unreadable: no witness, as status's count that failed
	}
	tf := parse.TargetFacts{Prompts: c.Prompts, PromptsAt: acc.promptsAt, Log: d.logTarget[c.Name]}
	if spec, ok := d.specs[c.Name]; ok {
		tf.MaxSamples, c.TokenBudget = spec.MaxSamples, spec.TokenBudget
	}
	if d.worker != nil {
		for _, ws := range d.worker.Categories {
			if ws.Name == c.Name {
				acc.jsonState, tf.Worker, tf.WorkerRead = ws.State, ws.Target, d.worker.StartedAt
				if ws.TokenBudget > 0 {
					c.TokenBudget = ws.TokenBudget
				}
			}
		}
	}
	c.Target, c.TargetSource, c.TargetNote = parse.JudgeTarget(tf)
	acc.raised = tf.Worker > 0 && c.Target > int64(tf.Worker)
	acc.maxSamples = int64(tf.MaxSamples)
	raw := filepath.Join(dir, parse.RawFile)
	n, kept, long, err := eachStamp(raw, d.o.Loc, d.keep.open(raw), func(ls lineStamp) {
		d.record(acc, ls)
	})
	acc.flushRun()
	acc.prov.flush()
	acc.held.flush(d, c.Name, &acc.minutes)
	d.count(n, err)
	d.s.Read.Kept += kept
	c.BadLines += int64(long)
	c.Done, c.DoneNote = parse.JudgeDone(parse.DoneFacts{Lines: acc.lines + int64(long), Records: c.Records, RecordsKnown: true,
		Worker: d.workerCat(c.Name)})
	return err
}

func (d *digester) count(n int64, err error) {
	if err == nil {
		d.s.Read.Files++
		d.s.Read.Bytes += n
	}
}

// record folds one line of raw_responses.jsonl, by its stamp.
func (d *digester) record(acc *catAcc, ls lineStamp) {
	c, st := acc.c, ls.st
	if ls.complete {
		acc.lines++
	}
	if ls.blank {
		return
	}
	if ls.err != nil {
		if ls.complete { // a torn tail is being written: not a bad line yet
			c.BadLines++
		}
		return
	}
	c.Records++
	c.Tokens += st.CompletionTokens
	unknown := int64(0)
	if !st.HasTokens {
		unknown = 1 // null, missing or not a count: apart, never 0 tokens
	}
	c.TokensUnknown += unknown
	acc.outcomes.Add(st.Outcome)
	acc.outcomes.AddPrompt(st.PromptTokens, st.HasPrompt)
	d.gateRecord(acc, st)
	acc.prov.noteRecord(st)
	run := acc.runOf(d, st.Run)
	run.Records++
	if !st.HasFinished {
		c.NoTime++
		return
	}
	t := st.Finished.In(d.o.Loc)
	d.waitRecord(c.Name, st.Run, t)
	widen(&run.First, &run.Last, t)
	widen(&c.First, &c.Last, t)
	if acc.spans == nil {
		acc.spans = map[string]*[2]time.Time{}
	}
	if sp := acc.spans[run.ID]; sp == nil {
		acc.spans[run.ID] = &[2]time.Time{t, t}
	} else {
		sp[0], sp[1] = minT(sp[0], t), maxT(sp[1], t)
	}
	if i := d.slot(t); i >= 0 {
		acc.held.add(d, c.Name, i, Counts{Records: 1, Tokens: st.CompletionTokens, TokensUnknown: unknown}, st.TimeField, int32(t.Sub(d.start)/time.Minute), &acc.minutes)
		if acc.inWindow == 0 || t.Before(acc.wFirst) {
			acc.wFirst = t
		}
		if acc.inWindow == 0 || t.After(acc.wLast) {
			acc.wLast = t
		}
		acc.inWindow++
	}
	// A stall is a gap between consecutive records of one run: the worker
	// was on this category all along. Records are appended as they finish,
	// so file order is time order up to the requests in flight; the
	// running maximum keeps a late-finishing straggler from opening a gap.
	if acc.seen && st.Run == acc.prevRun && t.Sub(acc.prevT) > d.o.StallAfter && t.After(d.start) {
		d.stall(c.Name, run.ID, acc.prevT, t, false, "")
	}
	if !acc.seen || st.Run != acc.prevRun || t.After(acc.prevT) {
		acc.prevT = t
	}
	acc.prevRun, acc.seen = st.Run, true
}

// widen stretches the span [*first, *last] (both nil, or both set) to t,
// in place: a new pointer a record, as the times grow in file order, was
// an allocation a record.
func widen(first, last **time.Time, t time.Time) {
	if *first == nil {
		f, l := t, t
		*first, *last = &f, &l
		return
	}
	if t.Before(**first) {
		**first = t
	}
	if t.After(**last) {
		**last = t
	}
}

func minTime(p *time.Time, t time.Time) *time.Time {
	if p == nil || t.Before(*p) {
		return &t
	}
	return p
}

func maxTime(p *time.Time, t time.Time) *time.Time {
	if p == nil || t.After(*p) {
		return &t
	}
	return p
}

func minT(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxT(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
