// Package worker is the inference worker that runs on the GPU host: it sends
// every prompt of every category to the SGLang server and appends each
// completion, exactly once and always as a whole line, to raw_responses.jsonl.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Worker is one run over a root.
type Worker struct {
	cfg    Config
	cats   []Category
	client *Client
	gate   *gate
	runID  string
	// lastRunDir is the category whose runs.jsonl got this run's latest
	// start line: its end line goes there too
	lastRunDir string
	rids       *ridSource
	lock       *Lock

	systemic       systemicGuard
	failedAttempts atomic.Int64 // attempts that failed, for the adaptive window
	yields         atomic.Int64 // attempts a gateway preempted (gateway.go): not failures
	srvLog         *logGauges   // the server's gauges from its log, without /metrics
	stopMu         sync.Mutex
	stopErr        error              // why the run was stopped from inside
	stopAll        context.CancelFunc // ends issuing and requests at once

	outMu sync.Mutex
	out   io.Writer

	mu        sync.Mutex
	state     parse.WorkerState
	statePath string
}

// Run plans the categories, takes the root's lock and works until every
// category is done or ctx is cancelled (SIGTERM/SIGINT). A cancelled run
// lets requests in flight finish for up to cfg.Grace, writes them, and
// returns nil. Log lines go to out, one write per line.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	if err := CheckPriority(cfg.Priority); err != nil {
		return err
	}
	cats, err := Plan(&cfg)
	if err != nil {
		return err
	}
	for _, c := range cats {
		if err := checkOneAnswer(c.Sampling); err != nil {
			return fmt.Errorf("class %s (category %s): %w", parse.SanitizeString(c.Class), parse.SanitizeString(c.Name), err)
		}
	}
	lock, err := AcquireLock(underRoot(cfg.Root, parse.RunDir))
	if err != nil {
		return err
	}
	defer lock.Release()
	maxConc := 1
	for _, c := range cats {
		maxConc = max(maxConc, c.Concurrency)
	}
	client := NewClient(cfg.Server, cfg.API, cfg.Model, maxConc)
	client.IdleGap = cfg.IdleGap
	key, err := loadAPIKey(cfg)
	if err != nil {
		return err
	}
	client.SetAPIKey(key)
	w := &Worker{
		cfg: cfg, cats: cats, out: out, client: client, lock: lock,
		runID:     newRunID(time.Now()),
		statePath: underRoot(cfg.Root, parse.WorkerStatePath),
		srvLog:    newLogGauges(cfg.ServerLog),
	}
	w.rids = &ridSource{run: w.runID}
	client.OnWhole = w.wholeAnswers
	w.initState()
	return w.run(ctx)
}

// stopRun ends the whole run from inside (the server refuses every
// request, or the lock's directory was replaced): nothing more is issued
// and requests in flight are cancelled.
func (w *Worker) stopRun(err error) {
	w.stopMu.Lock()
	defer w.stopMu.Unlock()
	if w.stopErr == nil {
		w.stopErr = err
		w.stopAll()
	}
}

func (w *Worker) stoppedBy() error {
	w.stopMu.Lock()
	defer w.stopMu.Unlock()
	return w.stopErr
}

// logf writes one log line. The log is read with `tail -f` on a terminal
// and parsed by the dashboard, and it carries names of folders, ids and
// server text: the whole line is sanitised (parse.SanitizeString), so no
// escape sequence reaches the terminal (OSC 52 clipboard writes, title
// changes) and no newline in a category name forges a line (integrity
// review finding 6). Clean text is written as is.
func (w *Worker) logf(format string, args ...any) {
	line := parse.SanitizeString(fmt.Sprintf(format, args...)) + "\n"
	w.outMu.Lock()
	defer w.outMu.Unlock()
	_, _ = io.WriteString(w.out, line) // unbuffered: each line reaches the file now
}

func (w *Worker) run(parent context.Context) error {
	// Requests get their own context: a stop signal ends issuing at once, but
	// in-flight requests have cfg.Grace to finish before they are cancelled.
	// A stop from inside (stopRun) ends both at once.
	reqCtx, cancelReq := context.WithCancel(context.Background())
	defer cancelReq()
	ctx, cancelIssue := context.WithCancel(parent)
	defer cancelIssue()
	w.stopAll = func() { cancelIssue(); cancelReq() }
	finished := make(chan struct{})
	defer close(finished) // runs first: the end of a run is no stop request
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		if w.stoppedBy() != nil {
			return
		}
		w.setWorkerState(parse.WorkerStopping, "")
		w.logf("Stop requested: no new requests; waiting up to %s for those in flight", w.cfg.Grace)
		select {
		case <-finished:
		case <-time.After(w.cfg.Grace):
			cancelReq()
		}
	}()

	stateCtx, stopState := context.WithCancel(context.Background())
	defer stopState()
	go w.stateLoop(stateCtx)

	// a 401 or 403 on /health is no server that is down: it stops the run
	health := func(ctx context.Context) error {
		err := w.client.Healthy(ctx)
		if a := authRefusal(err, w.client.apiKey != ""); a != nil {
			w.stopRun(a)
		}
		return err
	}
	w.gate = newGate(health,
		func(err error) {
			w.setWorkerState(parse.WorkerWaitingServer, "")
			w.logf("%s", parse.FormatWaiting(w.cfg.Server, err.Error()))
		},
		func(d time.Duration) {
			w.setWorkerState(parse.WorkerRunning, "")
			w.logf("%s", parse.FormatBack(w.cfg.Server, d))
		})
	w.logf("%s", parse.FormatBanner(w.cfg.Version, os.Getpid(), w.runID, w.cfg.Server, w.cfg.API, len(w.cats)))
	w.gate.Probe(reqCtx)
	if err := w.gate.Wait(ctx); err == nil {
		w.setWorkerState(parse.WorkerRunning, "")
	}
	if err := w.stoppedBy(); err != nil {
		return w.failRun(err)
	}
	if err := w.preflight(ctx); err != nil {
		return w.failRun(err)
	}
	w.choosePriority(ctx)

	for i, c := range w.cats {
		if ctx.Err() != nil {
			break
		}
		if err := w.runCategory(ctx, reqCtx, i, c); err != nil {
			return w.failRun(err)
		}
	}
	if err := w.stoppedBy(); err != nil {
		return w.failRun(err)
	}
	if ctx.Err() != nil {
		w.logf("Stopped; the next start resumes where this one ended.")
		w.setWorkerState(parse.WorkerStopped, "")
		w.endRun(parse.RunStopped, context.Cause(parent))
		w.writeState()
		return nil
	}
	failed := w.failedCats()
	if len(failed) > 0 {
		w.logf("%s", parse.FormatFinishedFailed(failed))
	} else {
		w.logf("%s", parse.FinishedLine)
	}
	w.setWorkerState(parse.WorkerDone, "")
	w.endRun(parse.RunFinished, nil)
	w.writeState()
	if len(failed) > 0 { // a job script's `worker && upload` must not go on
		return fmt.Errorf("%w: %s", ErrCategoriesFailed, strings.Join(failed, ", "))
	}
	return nil
}

// ErrCategoriesFailed ends a run that went through every category and
// failed some (their names follow); the log has said so already.
var ErrCategoriesFailed = errors.New("categories failed")

// failRun logs why the run ends in failure and records it in worker.json.
func (w *Worker) failRun(err error) error {
	w.logf("ERROR: %s", parse.SanitizeString(err.Error()))
	w.setWorkerState(parse.WorkerFailed, err.Error())
	w.endRun(parse.RunFailed, err)
	w.writeState()
	return err
}

// runCategory does one category. It returns an error only when the worker
// must stop (a write failed mid-run); a category that cannot run is marked
// failed and the next one goes on.
func (w *Worker) runCategory(ctx, reqCtx context.Context, idx int, c Category) error {
	w.logf("%s", parse.Separator)
	w.logf("%s", parse.FormatProcessing(c.Name, c.Class))
	w.logf("%s", parse.Separator)
	w.setCurrent(c.Name)
	w.updateCat(idx, func(s *parse.CategoryState) { s.State = parse.CatRunning })
	cannot := func(err error) error {
		w.logf("ERROR: %s: %s", c.Name, parse.SanitizeString(err.Error()))
		w.updateCat(idx, func(s *parse.CategoryState) { s.State = parse.CatFailed })
		return nil
	}

	prompts, err := readPromptSet(filepath.Join(c.Dir, parse.PromptsFile))
	if err != nil {
		return cannot(err)
	}
	if prompts.bad > 0 {
		w.logf("WARNING: %s: %d prompt lines have no readable id and are skipped (%s)", c.Name, prompts.bad, strings.Join(prompts.badExamples, "; "))
	}
	if w.cfg.API == "chat" && prompts.noMessages > 0 && prompts.noMessages == len(prompts.keys) {
		return cannot(fmt.Errorf("no prompt has \"messages\", which --api chat sends; for prompts with \"text\" or \"input_ids\" use --api generate"))
	}
	if prompts.dups > 0 {
		w.logf("WARNING: %s: %d prompt lines repeat the id of an earlier line and are skipped", c.Name, prompts.dups)
	}
	rawPath := filepath.Join(c.Dir, parse.RawFile)
	scan, err := ScanFile(rawPath)
	if err != nil {
		return cannot(err)
	}
	if scan.Cut > 0 {
		w.logf("%s: repaired torn tail of raw_responses.jsonl: cut %d bytes (%q)", c.Name, scan.Cut, scan.CutPreview)
	}
	if scan.BadLines > 0 {
		w.logf("WARNING: %s: raw_responses.jsonl holds %d lines that are not valid records; their ids are redone (%s)", c.Name, scan.BadLines, strings.Join(scan.BadExamples, "; "))
	}
	if scan.Duplicates > 0 {
		w.logf("WARNING: %s: raw_responses.jsonl holds %d duplicate ids (not written by this worker)", c.Name, scan.Duplicates)
	}
	done, tokens, stale := scan.match(prompts)
	if stale > 0 {
		w.logf("WARNING: %s: %d records in raw_responses.jsonl match no prompt (ids no prompt has any more); they do not count", c.Name, stale)
	}
	target := len(prompts.keys)
	if c.MaxSamples > 0 && c.MaxSamples < target {
		target = c.MaxSamples
	}
	lines, extra := lineFigures(scan, done)
	failed, err := failedPrompts(filepath.Join(c.Dir, parse.ErrorsFile), prompts, scan)
	if err != nil {
		w.logf("WARNING: %s: %s", c.Name, parse.SanitizeString(err.Error())) // only a figure: the run goes on
	}
	nFailed := len(failed)
	w.updateCat(idx, func(s *parse.CategoryState) {
		s.Done, s.Target, s.CompletionTokens, s.TokenBudget = done, target, tokens, c.TokenBudget
		s.Lines, s.ExtraLines, s.FailedPrompts = &lines, &extra, &nFailed
	})
	budgetReached := c.TokenBudget > 0 && tokens >= c.TokenBudget
	if budgetReached {
		w.logf("%s: token budget reached (%d of %d completion tokens)", c.Name, tokens, c.TokenBudget)
	}
	if done >= target || budgetReached {
		w.logf("%s", parse.FormatSkip(c.Name, done))
		w.updateCat(idx, func(s *parse.CategoryState) { s.State = parse.CatSkipped })
		return nil
	}
	if done > 0 {
		w.logf("%s", parse.FormatResume(c.Name, target, done, target-done))
	} else {
		w.logf("%s", parse.FormatPrompts(c.Name, target))
	}
	w.logf("%s", parse.FormatRunning(target-done, c.Concurrency, c.MaxTokens))
	snap := describeServer(reqCtx, w.client, w.cfg.ServerLog)
	config := windowKey(snap)
	ctl := w.startWindow(c, config)
	if err := w.lock.Held(); err != nil {
		return err
	}
	cut, err := appendRun(c.Dir, parse.RunLine{
		Run: w.runID, PID: os.Getpid(), StartedAt: stamp(time.Now()), Version: w.cfg.Version,
		Server: parse.Redact(w.cfg.Server), API: w.cfg.API, Model: w.cfg.Model, Snapshot: snap,
	})
	if err != nil {
		return cannot(fmt.Errorf("runs.jsonl: %w", err))
	}
	w.lastRunDir = c.Dir
	if cut > 0 {
		w.logf("%s: repaired torn tail of runs.jsonl: cut %d bytes", c.Name, cut)
	}
	r, err := newCatRun(w, idx, c, scan, target, done, tokens)
	if err != nil {
		return cannot(err)
	}
	r.failedKeys, r.ctl, r.config = failed, ctl, config
	return r.run(ctx, reqCtx)
}

// underRoot is rel, a slash path of the host layout (parse), under root.
func underRoot(root, rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

// idText is an id as text for request ids and messages ("7", "abc").
func idText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
