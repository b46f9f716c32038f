package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// catRun is one category in progress. Exactly Concurrency goroutines take
// prompts from it; one writer (the run loop) appends their results.
type catRun struct {
	w      *Worker
	idx    int
	c      Category
	target int
	raw    *Appender
	errs   *Appender
	start  time.Time

	mu        sync.Mutex
	src       *bufio.Reader
	srcFile   *os.File
	srcDone   bool
	seen      map[string]struct{} // ids done or issued
	resumed   int
	done      int // records written, resumed included
	written   int // records written by this run
	inflight  int
	landed    chan struct{} // closed when a request in flight lands (see next)
	ctl       *Controller   // the window: how many may be in flight (window.go)
	winMoved  chan struct{} // closed (and replaced) when the window changes
	noMore    bool          // next found nothing more to send
	errors    int
	tokens    int64 // completion tokens, resumed included
	runTokens int64 // completion tokens written by this run
	failed    error
	lastProg  time.Time
	lastLand  time.Time            // the last answer (record or error), or the start
	lastBeat  time.Time            // the last heartbeat line
	issued    map[uint64]time.Time // requests in flight by sequence: when each was issued
	seq       uint64
	printed   bool // a progress line was logged, at printedAt (done, errors)
	printedAt [2]int
	win       parse.RateWindow // this run's completions: the rate the dashboard also computes

	yields0       int64  // the worker's yields when this category began
	config        string // the server's windowKey, for the window's memory
	kept          int    // the window last remembered, at keptAt
	keptAt        time.Time
	failedKeys    map[string]struct{} // prompts whose latest attempt failed (worker.json's failed_prompts)
	warnedUnknown bool                // a record without token counts was logged
	led           parse.TokenLedger   // this run's wasted tokens so far (meter.go)
	meter         *meter
}

type item struct {
	id     json.RawMessage
	key    string // the id's canonical key
	prompt Prompt
	seq    uint64 // issue order, the key of catRun.issued
}

type outcome struct {
	item      item
	comp      Completion
	latency   time.Duration
	err       error
	attempts  int
	abandoned bool // cancelled after the grace period: redone next start
	// the tokens its failed attempts streamed (retried), and what the
	// attempt cut by the run's stop had streamed (aborted): the ledger's
	retried, aborted int64
}

// newCatRun starts a category whose raw_responses.jsonl holds scan; done
// and tokens are the records (and their completion tokens) that match a
// prompt (Scan.match).
func newCatRun(w *Worker, idx int, c Category, scan Scan, target, done int, tokens int64) (*catRun, error) {
	f, err := openInput(filepath.Join(c.Dir, parse.PromptsFile))
	if err != nil {
		return nil, fmt.Errorf("prompts: %w", err)
	}
	raw, err := OpenAppender(filepath.Join(c.Dir, parse.RawFile))
	if err != nil {
		f.Close()
		return nil, err
	}
	errPath := filepath.Join(c.Dir, parse.ErrorsFile)
	if cut, _, err := RepairTail(errPath); err != nil {
		f.Close()
		raw.Close()
		return nil, err
	} else if cut > 0 {
		w.logf("%s: repaired torn tail of errors.jsonl: cut %d bytes", c.Name, cut)
	}
	errs, err := OpenAppender(errPath)
	if err != nil {
		f.Close()
		raw.Close()
		return nil, err
	}
	raw.guard, errs.guard = w.lock.Held, w.lock.Held
	seen := make(map[string]struct{}, len(scan.Tokens))
	for k := range scan.Tokens {
		seen[k] = struct{}{}
	}
	return &catRun{
		w: w, idx: idx, c: c, target: target, raw: raw, errs: errs, start: time.Now(),
		src: bufio.NewReaderSize(f, 1<<20), srcFile: f, seen: seen,
		resumed: done, done: done, tokens: tokens, lastProg: time.Now(), lastLand: time.Now(),
		issued: map[uint64]time.Time{}, ctl: newWindow(c), winMoved: make(chan struct{}),
		yields0: w.yields.Load(), meter: w.newMeter(),
	}, nil
}

// next hands out the next prompt not yet done, while the caps allow one
// more request in flight.
func (r *catRun) next(issue context.Context) (it item, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if !ok && !r.noMore { // nothing more to send: the slots outside the window stop waiting
			r.noMore = true
			r.moveWindowLocked()
		}
	}()
	for {
		if issue.Err() != nil || r.failed != nil || r.srcDone || r.done+r.inflight >= r.target {
			return item{}, false
		}
		if b := r.c.TokenBudget; b > 0 && r.tokens+r.inflightTokensLocked() >= b {
			if r.tokens >= b || r.inflight == 0 {
				return item{}, false
			}
			// the requests out may come back shorter than the average (a
			// run once ended 30 tokens short of its budget, "done"): wait
			// for one to land, then look again
			r.waitLocked(issue)
			continue
		}
		line, err := r.src.ReadBytes('\n')
		if err != nil {
			r.srcDone = true // the last line may lack its newline: still use it
			if !errors.Is(err, io.EOF) {
				r.failed = fmt.Errorf("%s: read prompts: %w", r.c.Name, err)
				return item{}, false
			}
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		pl, err := parsePromptLine(line)
		if err != nil {
			continue // counted and logged by readPromptSet
		}
		if _, ok := r.seen[pl.key]; ok {
			continue
		}
		r.seen[pl.key] = struct{}{}
		r.inflight++
		r.seq++
		r.issued[r.seq] = time.Now()
		return item{id: pl.id, key: pl.key, prompt: pl.prompt, seq: r.seq}, true
	}
}

// landOne counts a request in flight as landed (r.mu held) and wakes a
// next that waits on the budget.
func (r *catRun) landOne(it item) {
	r.inflight--
	delete(r.issued, it.seq)
	r.lastLand = time.Now()
	if r.landed != nil {
		close(r.landed)
		r.landed = nil
	}
}

// waitLocked waits (r.mu held, released meanwhile) for a landing or the end
// of issuing.
func (r *catRun) waitLocked(issue context.Context) {
	if r.landed == nil {
		r.landed = make(chan struct{})
	}
	ch := r.landed
	r.mu.Unlock()
	select {
	case <-ch:
	case <-issue.Done():
	}
	r.mu.Lock()
}

// moveWindowLocked wakes the slots waiting in slot (r.mu held).
func (r *catRun) moveWindowLocked() {
	close(r.winMoved)
	r.winMoved = make(chan struct{})
}

// slot waits until slot i is inside the window; false when issuing ends.
// Slot i's goroutine sends one request at a time, so a window of n keeps
// at most n in flight, and a narrower one lets the slots beyond it finish
// their request and wait.
func (r *catRun) slot(i int, issue context.Context) bool {
	for {
		r.mu.Lock()
		open, moved, noMore := i < r.ctl.Window(), r.winMoved, r.noMore
		r.mu.Unlock()
		if noMore {
			return false
		}
		if open {
			return true
		}
		select {
		case <-moved:
		case <-issue.Done():
			return false
		}
	}
}

// inflightTokensLocked estimates the completion tokens of requests in flight
// from this category's mean so far; with no data yet it counts none.
func (r *catRun) inflightTokensLocked() int64 {
	if r.done == 0 {
		return 0
	}
	return r.tokens / int64(r.done) * int64(r.inflight)
}

func (r *catRun) run(issue, reqCtx context.Context) error {
	defer r.srcFile.Close()
	r.measure(context.WithoutCancel(issue)) // the counter and the power before the first request
	results := make(chan outcome, r.c.Concurrency)
	var wg sync.WaitGroup
	for i := 0; i < r.c.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r.slot(i, issue) {
				it, ok := r.next(issue)
				if !ok {
					return
				}
				results <- r.w.complete(reqCtx, r.c, it)
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	// the controller's loop ends before finish: a decision taken after the
	// category's end would write worker.json and windows.json behind it
	adaptCtx, stopAdapt := context.WithCancel(issue)
	adaptDone := make(chan struct{})
	go func() { defer close(adaptDone); r.adaptLoop(adaptCtx) }()
	meterDone := make(chan struct{})
	go func() { defer close(meterDone); r.meterLoop(adaptCtx) }()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for open := true; open; {
		select {
		case res, ok := <-results:
			if !ok {
				open = false
				break
			}
			r.handle(res)
		case <-tick.C:
			if err := r.raw.MaybeSync(); err != nil {
				r.fail(err)
			}
			if time.Since(r.lastProg) >= 30*time.Second {
				r.progress()
			}
			r.heartbeat()
		}
	}
	stopAdapt()
	<-adaptDone
	<-meterDone
	r.settleCounter(context.WithoutCancel(issue))
	r.measure(context.WithoutCancel(issue)) // every request landed: the counter has them
	return r.finish(issue)
}

func (r *catRun) handle(res outcome) {
	r.account(res)
	switch {
	case res.abandoned:
		r.mu.Lock()
		r.landOne(res.item)
		r.mu.Unlock()
	case res.err != nil:
		r.writeError(res)
	default:
		r.writeRecord(res)
	}
}

func (r *catRun) writeRecord(res outcome) {
	comp := res.comp
	line, err := encodeLine(record{
		ID: res.item.id, Category: r.c.Name, Run: r.w.runID,
		PromptTokens: tokenField(comp.PromptTokens, comp.TokensUnknown), CompletionTokens: tokenField(comp.CompletionTokens, comp.TokensUnknown),
		FinishReason: comp.FinishReason, LatencyS: res.latency.Seconds(), FinishedAt: stamp(time.Now()),
		Content: comp.Content, ReasoningContent: comp.Reasoning, Text: comp.Text, OutputIDs: comp.OutputIDs, PromptIDs: comp.PromptIDs,
	})
	if err != nil { // this answer cannot be written: the prompt's error, not the file's
		r.writeError(outcome{item: res.item, err: fmt.Errorf("encode record: %w", err), attempts: res.attempts})
		return
	}
	if r.failedErr() != nil { // an earlier write failed: drop it, the next start redoes it
		r.mu.Lock()
		r.led.Aborted += int64(comp.CompletionTokens)
		r.landOne(res.item)
		r.mu.Unlock()
		return
	}
	err = r.raw.Append(line)
	r.mu.Lock()
	r.landOne(res.item)
	if err != nil {
		r.mu.Unlock()
		r.fail(err)
		return
	}
	r.done++
	r.written++
	r.win.Add(time.Now(), int64(r.written))
	delete(r.failedKeys, res.item.key)
	r.tokens += int64(comp.CompletionTokens)
	r.runTokens += int64(comp.CompletionTokens)
	r.keptLocked(comp)
	n := r.written
	firstUnknown := comp.TokensUnknown && !r.warnedUnknown
	r.warnedUnknown = r.warnedUnknown || comp.TokensUnknown
	r.mu.Unlock()
	if firstUnknown {
		r.w.logf("WARNING: %s: the server sent no token counts for id %s (the stream ended without its usage chunk): its record says completion_tokens null", parse.SanitizeString(r.c.Name), parse.SanitizeString(idText(res.item.id)))
	}
	if n%50 == 0 {
		r.progress()
	} else {
		r.publish()
	}
}

// HeartbeatAfter is how long without an answer before the worker logs
// what it waits on, and how often it says it again (first-use review m9: 64
// requests hung for 10 minutes and the log said nothing).
var HeartbeatAfter = time.Minute

// heartbeat logs "waiting: 64 requests in flight, oldest 5m12s" when no
// answer has come for HeartbeatAfter (parse.ParseWorkerLine reads it as an
// ordinary line, not as progress).
func (r *catRun) heartbeat() {
	now := time.Now()
	r.mu.Lock()
	if r.inflight == 0 || now.Sub(r.lastLand) < HeartbeatAfter || now.Sub(r.lastBeat) < HeartbeatAfter {
		r.mu.Unlock()
		return
	}
	r.lastBeat = now
	oldest := now
	for _, t := range r.issued {
		if t.Before(oldest) {
			oldest = t
		}
	}
	n := r.inflight
	r.mu.Unlock()
	r.w.logf("%s", parse.FormatHeartbeat(n, now.Sub(oldest)))
}

func (r *catRun) writeError(res outcome) {
	status := 0
	var h *HTTPError
	if errors.As(res.err, &h) {
		status = h.Status
	}
	line, err := encodeLine(errorRecord{
		ID: res.item.id, Category: r.c.Name, Run: r.w.runID, Reason: res.err.Error(),
		Status: status, Attempts: res.attempts, At: stamp(time.Now()),
	})
	if err == nil {
		err = r.errs.Append(line)
	}
	r.mu.Lock()
	r.landOne(res.item)
	r.errors++
	if r.failedKeys == nil {
		r.failedKeys = map[string]struct{}{}
	}
	r.failedKeys[res.item.key] = struct{}{}
	r.mu.Unlock()
	// ids and server bodies are remote text: no escape sequence reaches a terminal tailing the log
	r.w.logf("%s: id %s failed: %s", r.c.Name, parse.SanitizeString(idText(res.item.id)), parse.SanitizeString(res.err.Error()))
	if err != nil {
		r.fail(err)
	}
}

// fail stops the category: nothing more is issued or written. A lost
// lock stops the whole run at once: another worker may own the root now.
func (r *catRun) fail(err error) {
	r.mu.Lock()
	if r.failed == nil {
		r.failed = err
	}
	r.mu.Unlock()
	if errors.Is(err, ErrLockLost) {
		r.w.stopRun(err)
	}
}

func (r *catRun) failedErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// stats returns the figures for the progress line and worker.json.
func (r *catRun) stats() (done, errs int, reqPerSec float64, avgComp int, eta time.Duration, etaKnown bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	elapsed := time.Since(r.start).Seconds()
	if perMin, ok := r.win.PerMin(time.Now()); ok {
		reqPerSec = perMin / 60 // recent pace, stalls fall out of it (parse.RateWindow)
	} else if elapsed > 0 {
		reqPerSec = float64(r.written) / elapsed
	}
	if r.written > 0 {
		avgComp = int(r.runTokens / int64(r.written))
	}
	if reqPerSec > 0 {
		eta, etaKnown = time.Duration(float64(r.target-r.done)/reqPerSec*float64(time.Second)), true
		if b := r.c.TokenBudget; b > 0 && r.runTokens > 0 {
			tokPerSec := float64(r.runTokens) / elapsed
			if byTokens := time.Duration(float64(b-r.tokens) / tokPerSec * float64(time.Second)); byTokens < eta {
				eta = max(byTokens, 0)
			}
		}
	}
	return r.done, r.errors, reqPerSec, avgComp, eta, etaKnown
}

func (r *catRun) publish() {
	done, errs, rps, _, eta, known := r.stats()
	r.mu.Lock()
	tokens, failed := r.tokens, len(r.failedKeys)
	window, reason := r.ctl.Window(), r.ctl.Reason()
	if _, ok := r.win.PerMin(time.Now()); !ok {
		rps, known = 0, false // worker.json gives no figure from the first few records (the log line still does, as Python's did)
	}
	r.mu.Unlock()
	r.w.updateCat(r.idx, func(s *parse.CategoryState) {
		s.Done, s.Errors, s.CompletionTokens, s.Rate = done, errs, tokens, rps*60
		s.FailedPrompts = &failed
		s.Window, s.WindowReason = window, reason
		s.Yielded = int(r.w.yields.Load() - r.yields0)
		s.ETASeconds = nil
		if known {
			v := eta.Seconds()
			s.ETASeconds = &v
		}
	})
}

func (r *catRun) progress() {
	done, errs, rps, avg, eta, known := r.stats()
	r.mu.Lock()
	r.lastProg = time.Now()
	same := r.printed && r.printedAt == [2]int{done, errs}
	r.printed, r.printedAt = true, [2]int{done, errs}
	win := r.windowTextLocked()
	r.mu.Unlock()
	if !same { // the last line already says it (the 50th record and the end, say)
		r.w.logf("%s %s", parse.FormatProgress(done, r.target, errs, rps, avg, eta, known), win)
	}
	r.publish()
}

func (r *catRun) finish(issue context.Context) error {
	err := r.raw.Close()
	if e := r.errs.Close(); err == nil {
		err = e
	}
	if ferr := r.failedErr(); ferr != nil {
		err = ferr
	}
	r.progress()
	r.keepWindow(true)
	r.logYields()
	r.writeTally(true)
	r.mu.Lock()
	tokens, budget, done, written := r.tokens, r.c.TokenBudget, r.done, r.written
	errCount := r.errors
	r.mu.Unlock()
	if budget > 0 && tokens >= budget {
		r.w.logf("%s: token budget reached: %d completion tokens of %d (overshoot %d)", r.c.Name, tokens, budget, tokens-budget)
	}
	state := parse.CatDone
	switch {
	case err != nil:
		state = parse.CatFailed
	case issue.Err() != nil && done < r.target && !(budget > 0 && tokens >= budget):
		state = parse.CatStopped
	case written == 0 && errCount > 0 && done < r.target:
		state = parse.CatFailed // not stopped, so nothing is left: every prompt sent failed
		r.w.logf("ERROR: %s: all %d prompts sent by this run failed (see errors.jsonl)", r.c.Name, errCount)
	}
	r.w.updateCat(r.idx, func(s *parse.CategoryState) {
		s.State = state
		if state != parse.CatRunning {
			s.ETASeconds = nil
		}
	})
	r.w.logf("%s: %s, %d records written by this run, %d in all", r.c.Name, state, written, done)
	if err != nil {
		return fmt.Errorf("%s: stopped writing: %w", r.c.Name, err)
	}
	return nil
}
