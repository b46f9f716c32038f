// Package liveness is the worker's part of a poll: worker.json, the
// process it names (or the one found writing the worker's files) and the
// kill note, read in the poll's batch and folded into what it knows of the
// worker between polls; it judges the worker's state and records its
// starts and exits. The Watcher composes it: Ask adds its reads to the
// poll's batch, Read reads their answers, FoldJSON, Fold and FoldLogLine
// fold them, Judge and Stall judge, Shown is the judgement. The Actor
// reads processes through its Reader.
package liveness

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
)

// Live is the worker's part of a poll (the package's doc says what it
// reads, folds and judges).
type Live struct {
	rd, h     remote.Host // rd: the poll's reads; h: the host itself (a read past the batch)
	lay       parse.Layout
	workerLog string
	procs     *Reader
	tl        *timeline.Timeline
	wjson     *parse.WorkerState // worker.json as last read (nil: none, or unparsable)

	cur        *Proc     // the worker process seen alive in the last poll
	last       *Proc     // the last one ever seen alive (for the pid and command after it ended)
	lastJSON   jsonID    // worker.json when last was last seen alive: a change means a newer worker ran
	note       *killNote // the kill note, read while no worker is alive (nil: none)
	aliveSince time.Time // when cur was first seen alive (or its start, when the host said)
	lastScan   time.Time
	scanNext   bool // evidence of a writer we do not know: scan in the next poll
	rescan     bool
	killed     map[int]bool // pids our kill stopped (kill markers in the worker log)
	waiting    bool         // the worker log's last gate line is "waiting for /health"
	logLines   bool         // the worker log has ever held a line
	bootTime   time.Time    // the host's boot time, from /proc/stat (zero: unknown)
	bootRead   bool
	procErr    error // the last poll could not read the process table
	reread     int   // the pid whose worker.json was read again once it was gone (readLive)
	jsonErr    error // this poll's read of worker.json failed so (nil: read, or none)

	shown snapshot.Worker // the worker as this poll judged it (judge, then stall)

	// the baseline for events
	polled    bool
	wasAlive  bool
	wasPID    int
	seenPID   int       // worker.json's pid and start last seen
	seenStart time.Time //
}

// Config is what a Live is made of: the poll's reads (rd) and the host
// itself (a read past the batch), the root's layout, the worker log and
// the timeline its events go to.
type Config struct {
	Reads, Host remote.Host
	Layout      parse.Layout
	WorkerLog   string
	Timeline    *timeline.Timeline
}

// New is the worker's part, knowing nothing yet.
func New(c Config) *Live {
	return &Live{rd: c.Reads, h: c.Host, lay: c.Layout, workerLog: c.WorkerLog, procs: NewReader(c.Reads, c.Layout.Root),
		tl: c.Timeline, killed: map[int]bool{}}
}

// Shown is the worker as the last poll judged it (Judge, then Stall).
func (l *Live) Shown() snapshot.Worker { return l.shown }

// JSON is worker.json as last read (nil: none, or unparsable).
func (l *Live) JSON() *parse.WorkerState { return l.wjson }

// Rescan makes the next poll scan the process table, whatever it knows.
func (l *Live) Rescan() { l.rescan = true }

// SawLogLines notes that the worker log has held a line: a worker ran.
func (l *Live) SawLogLines() { l.logLines = true }

// Reader reads the host's processes for the root.
func (l *Live) Reader() *Reader { return l.procs }

// PID is the worker seen alive at the last poll (0: none): the one a
// poll's vitals read.
func (l *Live) PID() int {
	if l.cur != nil {
		return l.cur.pid
	}
	return 0
}

// FoldLogLine folds what a worker log line says of the process: a kill
// marker, a wait for the server and its end.
func (l *Live) FoldLogLine(wl parse.WorkerLine) {
	switch wl.Kind {
	case parse.WKill:
		l.killed[wl.PID] = true
	case parse.WWaiting:
		l.waiting = true
	case parse.WBack, parse.WProgress, parse.WProcessing:
		l.waiting = false
	}
}

// jsonID names the worker a worker.json is about.
type jsonID struct {
	pid   int
	start time.Time
}

func idOf(st *parse.WorkerState) jsonID {
	if st == nil {
		return jsonID{}
	}
	return jsonID{st.PID, st.StartedAt}
}

// Reading is what one poll read of the worker.
type Reading struct {
	wjson    []byte
	wjsonErr error
	p        *Proc // the live worker process; nil: none
	err      error // the process table could not be read
	scanned  bool
	scanErr  error
	boot     time.Time
	note     []byte // the kill note (read only when no live worker was found)
	noteRead bool
}

// Read reads worker.json and, in the same round trip, re-checks the
// process seen alive last time (the poll's batch's answers, asks, where it
// gave them). A pid that changed is read in a second round; a scan of the
// process table only when no live worker is known.
func (l *Live) Read(ctx context.Context, now time.Time, polls int, asks Asks) Reading {
	l.procs.Use(asks.Procs, asks.Real)
	defer l.procs.Use(nil, nil)
	lr, prevP, prevErr := l.readRound(ctx, asks)
	jsonPID := lr.jsonPID()
	// 1. the pid worker.json names, if it is our worker
	if p, err := l.jsonWorker(ctx, jsonPID, prevP, prevErr); err != nil {
		lr.err = err
	} else if p != nil {
		lr.p = p
		return lr
	}
	// 2. the process found writing last time, still the same one
	if prevP != nil && (prevP.worker || prevP.writes != "") {
		lr.p = prevP
		return lr
	}
	if prevErr != nil {
		lr.err = prevErr
	}
	// 3. whoever writes the worker's files
	if polls <= 1 || l.scanNext || l.rescan || now.Sub(l.lastScan) >= scanEvery {
		lr.scanned = true
		ws, err := l.procs.Writers(ctx, l.workerLog)
		lr.scanErr = err
		if len(ws) > 0 {
			lr.p, lr.err = ws[0], nil
		}
	}
	if lr.p == nil && lr.err == nil {
		l.readEnd(ctx, &lr, jsonPID, asks.note)
	}
	return lr
}

// readRound is the poll's first round trip: worker.json, the process seen
// alive last time (nil when its pid now names another), and the boot time
// until it is known.
func (l *Live) readRound(ctx context.Context, asks Asks) (lr Reading, prevP *Proc, prevErr error) {
	prev := l.cur
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		lr.wjson, lr.wjsonErr = ReadCat(ctx, l.rd, asks.wjson, l.lay.WorkerJSON(), 4<<20)
	}()
	if prev != nil {
		if asks.pid != prev.pid {
			asks.cmdline, asks.stat = nil, nil
		}
		wg.Add(1)
		go func() { defer wg.Done(); prevP, prevErr = l.procs.readAsked(ctx, prev.pid, asks.cmdline, asks.stat) }()
	}
	if !l.bootRead {
		wg.Add(1)
		go func() { defer wg.Done(); lr.boot = readBootTime(ctx, l.rd, asks.boot) }()
	}
	wg.Wait()
	if prevP != nil && prevP.start != prev.start {
		prevP = nil // the pid now names another process
	}
	if prevP != nil {
		prevP.writes = prev.writes
	}
	return lr, prevP, prevErr
}

// LinkLost says a read of the worker failed on the lost link: the poll is
// read again once the link is back (Watcher.lost), not judged on it.
func (lr Reading) LinkLost() bool {
	return errors.Is(lr.err, remote.ErrDisconnected) || errors.Is(lr.wjsonErr, remote.ErrDisconnected)
}

// WorkerJSON is this poll's read of worker.json (FoldJSON's argument).
func (lr Reading) WorkerJSON() ([]byte, error) { return lr.wjson, lr.wjsonErr }

// jsonPID is the pid worker.json names (0: none, or no worker.json).
func (lr Reading) jsonPID() int {
	if lr.wjsonErr != nil {
		return 0
	}
	st, err := parse.ParseWorkerState(lr.wjson)
	if err != nil {
		return 0
	}
	return st.PID
}

// jsonWorker is the process worker.json names (pid 0: none) when it is
// our worker, read again only when it is not the one read last time.
func (l *Live) jsonWorker(ctx context.Context, pid int, prevP *Proc, prevErr error) (*Proc, error) {
	if pid <= 0 {
		return nil, nil
	}
	p, err := prevP, prevErr
	if l.cur == nil || l.cur.pid != pid {
		p, err = l.procs.Read(ctx, pid)
	}
	if err != nil || p == nil || !p.worker {
		return nil, err
	}
	return p, nil
}

// readEnd reads, when no worker was found alive, what says how the last
// one ended.
func (l *Live) readEnd(ctx context.Context, lr *Reading, jsonPID int, note *remote.CatAsk) {
	if jsonPID > 0 && l.reread != jsonPID && liveJSON(lr.wjson) {
		// worker.json says it runs but its pid is gone: it may have ended
		// between the two reads of this poll (read while it ran, /proc after
		// it exited with worker.json done). Read worker.json again, past the
		// poll's batch, once for that pid: a clean end is no death.
		l.reread = jsonPID
		if b, err := l.h.ReadAt(ctx, l.lay.WorkerJSON(), 0, 4<<20); err == nil {
			lr.wjson, lr.wjsonErr = b, nil
		}
	}
	// whether our kill stopped the last one is in the note
	b, err := ReadCat(ctx, l.rd, note, l.lay.KillNote(), 4096)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		lr.note, lr.noteRead = b, true
	}
}

// liveJSON says whether worker.json says its worker runs (not done, stopped
// or failed).
func liveJSON(b []byte) bool {
	st, err := parse.ParseWorkerState(b)
	if err != nil {
		return false
	}
	switch st.State {
	case parse.WorkerDone, parse.WorkerStopped, parse.WorkerFailed:
		return false
	}
	return true
}

// readBootTime reads btime from the host's /proc/stat.
func readBootTime(ctx context.Context, rd remote.Host, ask *remote.CatAsk) time.Time {
	b, err := ReadCat(ctx, rd, ask, "/proc/stat", 64<<10)
	if err != nil {
		return time.Time{}
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if f := strings.Fields(string(l)); len(f) == 2 && f[0] == "btime" {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return time.Unix(n, 0)
			}
		}
	}
	return time.Time{}
}

// startedAt is when p started on the host (USER_HZ is 100 on Linux).
func (l *Live) startedAt(p *Proc) time.Time {
	if l.bootTime.IsZero() || p == nil {
		return time.Time{}
	}
	return l.bootTime.Add(time.Duration(p.start) * 10 * time.Millisecond)
}

// bornAt is since when a worker first seen now is alive: its start on the
// host when known (and past), else now.
func (l *Live) bornAt(p *Proc, now time.Time) time.Time {
	if t := l.startedAt(p); !t.IsZero() && t.Before(now) {
		return t
	}
	return now
}

// Fold folds this poll's read of the process (after FoldJSON).
func (l *Live) Fold(lr Reading, now time.Time) {
	if !l.bootRead && !lr.boot.IsZero() {
		l.bootTime, l.bootRead = lr.boot, true
	}
	if lr.scanned {
		l.lastScan, l.scanNext, l.rescan = now, false, false
	}
	if lr.p != nil && (l.cur == nil || l.cur.pid != lr.p.pid || l.cur.start != lr.p.start) {
		l.aliveSince = l.bornAt(lr.p, now)
	}
	if lr.err == nil || lr.p != nil {
		l.cur = lr.p
	}
	l.procErr = nil
	if lr.p == nil {
		l.procErr = lr.err
	}
	if lr.p != nil {
		l.last, l.lastJSON = lr.p, idOf(l.wjson)
	}
	if lr.noteRead {
		l.note = nil
		if n, ok := parseKillNote(lr.note); ok {
			l.note = &n
		}
	}
}

// NoteGrowth: a worker log or category file that grew while no live
// writer is known means one exists: scan for it in the next poll.
// Call it before the counts fold; catsGrew (counts.grewIn) says whether a
// category file grew, asked only when it matters.
func (l *Live) NoteGrowth(res remote.PollResult, catsGrew func(remote.PollResult) bool, polls int) {
	if l.cur != nil || polls <= 1 {
		return
	}
	if len(res.Tails[0].Lines) > 0 || catsGrew(res) {
		l.scanNext = true
	}
}

// workerFacts gathers this poll's witnesses. With no live worker, the one
// judged is the last seen alive (unless worker.json has moved on since),
// else worker.json's, else the one the kill note names, whichever is the
// latest.
func (l *Live) facts(finished bool) workerFacts {
	st := l.wjson
	// a process this poll could not read is not known alive: l.cur is
	// kept for the next read's identity, not as evidence (a read on a
	// link just back from a sleep said "running" of a worker that exited)
	f := workerFacts{Known: l.procErr == nil, Alive: l.cur != nil && l.procErr == nil, Finished: finished,
		Ran: st != nil || l.logLines || l.last != nil || l.note != nil}
	var start uint64
	var fromJSON bool
	f.PID, start, fromJSON = l.judgedWorker()
	if fromJSON {
		f.Phase, f.JSONError, f.Failed = st.State, st.Error, st.FailedCategories()
	}
	f.Killed = f.PID > 0 && (l.note.names(f.PID, start) || l.killed[f.PID])
	return f
}

// judgedWorker is the worker judged, in the order facts gives, and whether
// worker.json speaks of it.
func (l *Live) judgedWorker() (pid int, start uint64, fromJSON bool) {
	st := l.wjson
	switch {
	case l.cur != nil:
		return l.cur.pid, 0, jsonNames(st, l.cur.pid)
	case l.last != nil && (st == nil || st.PID == l.last.pid || idOf(st) == l.lastJSON):
		return l.last.pid, l.last.start, jsonNames(st, l.last.pid)
	case st != nil && st.PID > 0 && !l.noteIsLater(st):
		return st.PID, 0, true
	case l.note != nil:
		return l.note.pid, l.note.start, false
	}
	return 0, 0, st != nil
}

func jsonNames(st *parse.WorkerState, pid int) bool { return st != nil && st.PID == pid }

// noteIsLater: the kill note names another worker than st, killed after
// st was last written.
func (l *Live) noteIsLater(st *parse.WorkerState) bool {
	return l.note != nil && l.note.pid != st.PID && st.UpdatedAt.Unix() < l.note.at.Unix()
}

// WaitingServer: a live worker says it waits for the server's /health.
func (l *Live) WaitingServer() bool {
	if l.cur == nil {
		return false
	}
	if st := l.wjson; st != nil && st.PID == l.cur.pid {
		return st.State == parse.WorkerWaitingServer
	}
	return l.waiting
}

// view is the worker as the Snapshot shows it; finished, category and
// logLast are the worker log's ("All categories finished.", its last
// header, when it was last written).
func (l *Live) view(finished bool, category string, logLast time.Time) snapshot.Worker {
	f := l.facts(finished)
	v := snapshot.Worker{PID: f.PID, Category: category, Source: "log"}
	v.State, v.Reason, v.ByYou = workerStateFor(f)
	p := l.cur
	if p == nil && l.last != nil && l.last.pid == f.PID {
		p = l.last // ended: its pid and command are still worth showing
	}
	if st := l.wjson; st != nil && (st.PID == f.PID || f.PID == 0) { // a stale worker.json says nothing of another process
		viewJSON(&v, st, f.PID)
	}
	if p != nil && p.pid == f.PID {
		l.viewProc(&v, p, f.Alive, logLast)
	}
	if v.State == snapshot.WorkerNone {
		v.Source = ""
	}
	return v
}

// viewJSON is what worker.json says of the worker judged (pid): all of
// it when it names that pid, its category and phase when it names none.
func viewJSON(v *snapshot.Worker, st *parse.WorkerState, pid int) {
	up := st.UpdatedAt.UTC()
	v.Category, v.Phase, v.UpdatedAt = st.Category, st.State, &up
	if st.PID == pid {
		v.Source = parse.WorkerStateFile
		if !st.StartedAt.IsZero() {
			t := st.StartedAt.UTC()
			v.StartedAt = &t
		}
	}
}

// viewProc is what the worker's process says: its command, whether it is
// frozen, and what it works on when worker.json does not say.
func (l *Live) viewProc(v *snapshot.Worker, p *Proc, alive bool, logLast time.Time) {
	v.Command = p.Command()
	v.Frozen = alive && p.frozen
	if p.writes != "" && v.Source != parse.WorkerStateFile {
		v.Source = "proc"
		if c := writerCategory(p.writes); c != "" && (v.Category == "" || logLast.Before(l.startedAt(p))) {
			v.Category = c // the file it holds open says what it works on: a log that names none, or only an older process's
		}
	}
	if t := l.startedAt(p); v.StartedAt == nil && !t.IsZero() {
		t = t.UTC()
		v.StartedAt = &t
	}
}

// Judge judges the worker from what the poll folded, before its stall
// (which needs the categories judged).
func (l *Live) Judge(finished bool, category string, logLast time.Time) {
	l.shown = l.view(finished, category, logLast)
}

// writerCategory is the category whose raw_responses.jsonl a writer holds
// open ("" for the worker log): prepared/NAME/raw_responses.jsonl. A
// symlinked category's real path names its target's folder, which is then
// no category, and the log alone tells.
func writerCategory(writes string) string {
	if path.Base(writes) != parse.RawFile {
		return ""
	}
	dir := path.Dir(writes)
	if path.Base(path.Dir(dir)) != parse.PreparedDir {
		return ""
	}
	return path.Base(dir)
}

// Stall marks the judged worker stalled when its category is, or when
// nothing has grown anywhere for StallAfter since it was first seen alive.
func (l *Live) Stall(cats []snapshot.Category, now time.Time, after time.Duration) {
	wk := &l.shown
	if wk.State != snapshot.WorkerRunning {
		return
	}
	var newest time.Time
	for _, c := range cats {
		if c.State == snapshot.StateStalled {
			wk.State, wk.Reason = snapshot.WorkerStalled, c.Name+": "+c.Reason // the row's own words
		}
		if c.LastGrowth != nil && c.LastGrowth.After(newest) {
			newest = *c.LastGrowth
		}
		if c.State == snapshot.StateRunning {
			return // its category is judged on its own, with its own pace
		}
	}
	if wk.State == snapshot.WorkerRunning {
		since := l.aliveSince
		if newest.After(since) {
			since = newest
		}
		if !since.IsZero() && now.Sub(since) > after {
			wk.State, wk.Reason = snapshot.WorkerStalled, "no new records for "+snapshot.FormatDuration(now.Sub(since))
		}
	}
	if wk.State == snapshot.WorkerStalled && l.WaitingServer() {
		wk.Reason += "; waiting for the server (/health)"
	}
}

// FoldJSON folds this poll's read of worker.json: a missing or unparsable
// one is none, a read that failed otherwise keeps the last. It returns the
// state when one was read, for the categories it names.
func (l *Live) FoldJSON(data []byte, err error) *parse.WorkerState {
	l.jsonErr = err
	switch {
	case err == nil:
		st, perr := parse.ParseWorkerState(data)
		if perr != nil {
			l.wjson = nil
			return nil
		}
		l.wjson = &st
		return l.wjson
	case errors.Is(err, fs.ErrNotExist):
		l.wjson = nil
	}
	return nil
}
