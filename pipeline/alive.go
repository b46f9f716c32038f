package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// liveState is what the watcher knows of the worker process between polls.
type liveState struct {
	cur        *proc     // the worker process seen alive in the last poll
	last       *proc     // the last one ever seen alive (for the pid and command after it ended)
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

	// the baseline for events
	polled    bool
	wasAlive  bool
	wasPID    int
	seenPID   int       // worker.json's pid and start last seen
	seenStart time.Time //
}

// pid is the worker seen alive at the last poll (0: none): the one a
// poll's vitals read.
func (l *liveState) pid() int {
	if l.cur != nil {
		return l.cur.pid
	}
	return 0
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

// Rescan makes the next poll scan the host's process table for a worker,
// whatever it knows: call it after a launch, resume or restart.
func (w *Watcher) Rescan() {
	w.mu.Lock()
	w.live.rescan = true
	w.mu.Unlock()
}

// liveRead is what one poll read of the worker.
type liveRead struct {
	wjson    []byte
	wjsonErr error
	p        *proc // the live worker process; nil: none
	err      error // the process table could not be read
	scanned  bool
	scanErr  error
	boot     time.Time
	note     []byte // the kill note (read only when no live worker was found)
	noteRead bool
}

// readLive reads worker.json and, in the same round trip, re-checks the
// process seen alive last time. A pid that changed is read in a second
// round; a scan of the process table only when no live worker is known.
func (w *Watcher) readLive(ctx context.Context, now time.Time) liveRead {
	var lr liveRead
	prev := w.live.cur
	var prevP *proc
	var prevErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		lr.wjson, lr.wjsonErr = w.rd.ReadAt(ctx, w.layout().WorkerJSON(), 0, 4<<20)
	}()
	if prev != nil {
		wg.Add(1)
		go func() { defer wg.Done(); prevP, prevErr = w.procs.read(ctx, prev.pid) }()
	}
	if !w.live.bootRead {
		wg.Add(1)
		go func() { defer wg.Done(); lr.boot = readBootTime(ctx, w) }()
	}
	wg.Wait()
	if prevP != nil && prevP.start != prev.start {
		prevP = nil // the pid now names another process
	}
	if prevP != nil {
		prevP.writes = prev.writes
	}
	jsonPID := 0
	if lr.wjsonErr == nil {
		if st, err := parse.ParseWorkerState(lr.wjson); err == nil {
			jsonPID = st.PID
		}
	}
	// 1. the pid worker.json names, if it is our worker
	if jsonPID > 0 {
		var p *proc
		var err error
		if prev != nil && prev.pid == jsonPID {
			p, err = prevP, prevErr
		} else {
			p, err = w.procs.read(ctx, jsonPID)
		}
		switch {
		case err != nil:
			lr.err = err
		case p != nil && p.worker:
			lr.p = p
			return lr
		}
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
	if w.polls <= 1 || w.live.scanNext || w.live.rescan || now.Sub(w.live.lastScan) >= scanEvery {
		lr.scanned = true
		ws, err := w.procs.writers(ctx, w.o.WorkerLog)
		lr.scanErr = err
		if len(ws) > 0 {
			lr.p, lr.err = ws[0], nil
		}
	}
	if lr.p == nil && lr.err == nil && jsonPID > 0 && w.live.reread != jsonPID && liveJSON(lr.wjson) {
		// worker.json says it runs but its pid is gone: it may have ended
		// between the two reads of this poll (read while it ran, /proc after
		// it exited with worker.json done). Read worker.json again, past the
		// poll's batch, once for that pid: a clean end is no death.
		w.live.reread = jsonPID
		if b, err := w.h.ReadAt(ctx, w.layout().WorkerJSON(), 0, 4<<20); err == nil {
			lr.wjson, lr.wjsonErr = b, nil
		}
	}
	if lr.p == nil && lr.err == nil {
		// none alive: whether our kill stopped the last one is in the note
		b, err := w.rd.ReadAt(ctx, w.layout().KillNote(), 0, 4096)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			lr.note, lr.noteRead = b, true
		}
	}
	return lr
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
func readBootTime(ctx context.Context, w *Watcher) time.Time {
	b, err := w.rd.ReadAt(ctx, "/proc/stat", 0, 64<<10)
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
func (w *Watcher) startedAt(p *proc) time.Time {
	if w.live.bootTime.IsZero() || p == nil {
		return time.Time{}
	}
	return w.live.bootTime.Add(time.Duration(p.start) * 10 * time.Millisecond)
}

func (w *Watcher) foldLive(lr liveRead, now time.Time) {
	l := &w.live
	if !l.bootRead && !lr.boot.IsZero() {
		l.bootTime, l.bootRead = lr.boot, true
	}
	if lr.scanned {
		l.lastScan, l.scanNext, l.rescan = now, false, false
	}
	if lr.p != nil && (l.cur == nil || l.cur.pid != lr.p.pid || l.cur.start != lr.p.start) {
		l.aliveSince = now
		if t := w.startedAt(lr.p); !t.IsZero() && t.Before(now) {
			l.aliveSince = t
		}
	}
	if lr.err == nil || lr.p != nil {
		l.cur = lr.p
	}
	l.procErr = nil
	if lr.p == nil {
		l.procErr = lr.err
	}
	if lr.p != nil {
		l.last, l.lastJSON = lr.p, idOf(w.wjson)
	}
	if lr.noteRead {
		l.note = nil
		if n, ok := parseKillNote(lr.note); ok {
			l.note = &n
		}
	}
}

// noteGrowth: a worker log or category file that grew while no live
// writer is known means one exists: scan for it in the next poll.
// Call it before foldCounts.
func (w *Watcher) noteGrowth(res remote.PollResult) {
	if w.live.cur != nil || w.polls <= 1 {
		return
	}
	grew := len(res.Tails[0].Lines) > 0
	raw := make(map[string]int64, len(w.cats)) // a map, not a scan per count: 10,000 categories made it 10^8 compares a poll
	for _, c := range w.cats {
		raw[c.raw.Path] = c.lines
	}
	for _, up := range res.Counts {
		if lines, ok := raw[up.Path]; ok && up.Err == nil && up.Lines > lines {
			grew = true
		}
	}
	if grew {
		w.live.scanNext = true
	}
}

// workerFacts gathers this poll's witnesses. With no live worker, the one
// judged is the last seen alive (unless worker.json has moved on since),
// else worker.json's, else the one the kill note names, whichever is the
// latest.
func (w *Watcher) workerFacts() workerFacts {
	l := &w.live
	st := w.wjson
	f := workerFacts{known: l.cur != nil || l.procErr == nil, alive: l.cur != nil, finished: w.log.finished,
		ran: st != nil || l.logLines || l.last != nil || l.note != nil}
	var start uint64
	fromJSON := false
	switch {
	case l.cur != nil:
		f.pid, fromJSON = l.cur.pid, st != nil && st.PID == l.cur.pid
	case l.last != nil && (st == nil || st.PID == l.last.pid || idOf(st) == l.lastJSON):
		f.pid, start, fromJSON = l.last.pid, l.last.start, st != nil && st.PID == l.last.pid
	case st != nil && st.PID > 0 && !(l.note != nil && l.note.pid != st.PID && st.UpdatedAt.Unix() < l.note.at.Unix()):
		f.pid, fromJSON = st.PID, true
	case l.note != nil:
		f.pid, start = l.note.pid, l.note.start
	case st != nil:
		fromJSON = true
	}
	if fromJSON {
		f.phase, f.jsonError = st.State, st.Error
	}
	f.killed = f.pid > 0 && (l.note.names(f.pid, start) || l.killed[f.pid])
	return f
}

// workerWaiting: a live worker says it waits for the server's /health.
func (w *Watcher) workerWaiting() bool {
	if w.live.cur == nil {
		return false
	}
	if st := w.wjson; st != nil && st.PID == w.live.cur.pid {
		return st.State == parse.WorkerWaitingServer
	}
	return w.live.waiting
}

// workerEvents records starts, exits and pid changes, including a worker
// that started and ended between two polls (worker.json moved on).
func (w *Watcher) workerEvents(v Worker, now time.Time) {
	l := &w.live
	alive := Alive(v.State)
	if v.State == WorkerUnknown {
		return
	}
	if l.polled {
		switch {
		case alive && !l.wasAlive:
			w.event(now, "worker_started", v.Category, fmt.Sprintf("worker started (pid %d): %s", v.PID, v.Command))
		case alive && v.PID != l.wasPID:
			// another worker took over between two polls (a restart): the
			// old one ended, a new one started
			w.event(now, "worker_exited", "", fmt.Sprintf("worker pid %d %s", l.wasPID, w.goneText(l.wasPID)))
			w.event(now, "worker_started", v.Category, fmt.Sprintf("worker started (pid %d, after pid %d): %s", v.PID, l.wasPID, v.Command))
		case !alive && l.wasAlive && v.PID == l.wasPID:
			w.event(w.endedAt(v.PID, now), "worker_exited", "", fmt.Sprintf("worker pid %d %s", l.wasPID, endText(v)))
		case !alive && l.wasAlive:
			w.event(now, "worker_exited", "", fmt.Sprintf("worker pid %d %s", l.wasPID, w.goneText(l.wasPID)))
		}
		if st := w.wjson; st != nil && st.PID > 0 && !(alive && st.PID == v.PID) && st.PID != l.wasPID &&
			(st.PID != l.seenPID || !st.StartedAt.Equal(l.seenStart)) {
			// ran between two polls: it is neither the one alive now nor the one before
			start, end := st.StartedAt, st.UpdatedAt
			if start.IsZero() || start.After(now) {
				start = now
			}
			if end.Before(start) || end.After(now) {
				end = start
			}
			w.event(start, "worker_started", "", fmt.Sprintf("worker started (pid %d) between two polls", st.PID))
			w.event(end, "worker_exited", "", fmt.Sprintf("worker pid %d ended between two polls (worker.json: %s)", st.PID, st.State))
		}
	}
	l.polled, l.wasAlive, l.wasPID = true, alive, v.PID
	if st := w.wjson; st != nil {
		l.seenPID, l.seenStart = st.PID, st.StartedAt
	}
}

// goneText says how a worker that is no longer the one judged ended, as
// far as the host tells: our kill, or just ended.
func (w *Watcher) goneText(pid int) string {
	if w.live.killed[pid] || w.live.note.names(pid, 0) {
		return "stopped by you"
	}
	return "ended"
}

func endText(v Worker) string {
	switch {
	case v.ByYou:
		return "stopped by you"
	case v.State == WorkerExited:
		return "exited: " + v.Reason
	case v.State == WorkerStopped:
		return "stopped: " + v.Reason
	}
	return string(v.State) + ": " + v.Reason
}

// serverProbe is what asking the server said this poll.
type serverProbe struct {
	metrics, health string // ok | refused | timeout | no_metrics | http NNN | error | "" (not asked)
	err             string
	skipped         bool // /metrics not asked this poll (backed off): the last answer stands
}

// probeKind names how a request to the server ended.
func probeKind(err error) string {
	var se statusError
	var ne net.Error
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errNoSeries):
		return "no_metrics"
	case errors.As(err, &se) && se.code == 404:
		return "no_metrics"
	case errors.As(err, &se):
		return "http " + strconv.Itoa(se.code)
	case strings.Contains(strings.ToLower(err.Error()), "connection refused"):
		return "refused" // local: ECONNREFUSED; over SSH: "connect failed (Connection refused)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "error"
}

// probeServer asks /metrics, backing off only when it is missing (metrics
// not enabled) or hangs; a refusal costs one round trip and is asked every
// poll, since it is the first witness of a dead server. Without /metrics,
// /health says whether the server answers.
func (w *Watcher) probeServer(ctx context.Context, s *srvWatch) (parse.ServerMetrics, serverProbe, error) {
	var pr serverProbe
	last := s.st.probe.metrics
	skip := s.metFails > 3 && (last == "no_metrics" && w.polls%10 != 0 || last == "timeout" && w.polls%3 != 0)
	var met parse.ServerMetrics
	var err error
	if skip {
		pr.metrics, pr.skipped = last, true
		err = errors.New("/metrics not tried this poll")
	} else {
		met, err = w.metrics(ctx, s.spec.URL)
		pr.metrics = probeKind(err)
		if err != nil {
			pr.err = err.Error()
		}
	}
	if pr.metrics == "no_metrics" || strings.HasPrefix(pr.metrics, "http ") {
		resp, herr := w.get(ctx, s.spec.URL, "/health")
		if herr == nil {
			resp.Body.Close()
		}
		pr.health = probeKind(herr)
		if pr.health == "no_metrics" {
			pr.health = "http 404"
		}
	}
	return met, pr, err
}

func (w *Watcher) foldProbe(s *srvWatch, pr serverProbe) {
	if pr.skipped {
		pr.err = s.st.probe.err
	}
	switch {
	case pr.skipped:
	case pr.metrics == s.st.probe.metrics && pr.metrics != "ok":
		s.metFails++
	case pr.metrics == "ok":
		s.metFails = 0
	default:
		s.metFails = 1
	}
	if pr.metrics == "refused" {
		s.st.refused++
	} else if !pr.skipped {
		s.st.refused = 0
	}
	s.st.probe = pr
}

// FiguresLabel says where a server's figures come from, as views print it:
// "metrics", "log", or "log, 12m old" when they are not live.
func FiguresLabel(v Server) string {
	if v.FiguresStale && v.FiguresAgeSeconds != nil {
		return v.Source + ", " + FormatDuration(time.Duration(*v.FiguresAgeSeconds*float64(time.Second))) + " old"
	}
	return v.Source
}

// serverFacts are one poll's witnesses of the server, for serverStateFor.
type serverFacts struct {
	metrics, health string        // serverProbe's kinds
	refused         int           // polls in a row /metrics was refused
	phase           string        // the log's lifecycle: "", startup, ready, crash, stop
	fault           string        // a fault logged since the server last made progress
	hang            string        // a hang seen since the server last made progress
	stop            string        // the graceful stop's line (phase stop)
	logSeen         bool          // there is a server log
	logGrew         bool          // it grew since the last poll
	logAge          time.Duration // since it last grew
	waiting         bool          // a live worker waits for /health
	load            int           // running + queued requests (metrics, or fresh log lines)
	crash           string
	url             string
}

// quietAfter: a server log that has not grown for this long is quiet.
const quietAfter = 30 * time.Second

// serverStateFor is the state table. Refused plus a quiet log (none, or
// no growth for quietAfter), or refused plus a live worker waiting for
// /health while the log did not grow since the last poll, is down. A
// refusal with a fresh log and no waiting worker is judged by the log:
// the URL may not be the server's (the reason says so).
func serverStateFor(f serverFacts) (state ServerState, reason string) {
	answering := f.metrics == "ok" || f.health == "ok"
	fromLog := func(why string) (ServerState, string) {
		switch f.phase {
		case "crash":
			return ServerCrashed, join(why, "last log record is a crash")
		case "stop":
			return ServerStopped, join(why, "stopped on request: "+f.stop)
		case "startup":
			return ServerStarting, join(why, "the log shows the server loading")
		case "ready":
			if f.hang != "" {
				return ServerHung, join(why, "hang: "+f.hang)
			}
			if f.fault != "" {
				return ServerUnhealthy, join(why, "fault: "+f.fault)
			}
			if f.load > 0 {
				return ServerBusy, why
			}
			return ServerReady, why
		}
		if f.hang != "" { // a first read that begins after the last batch line
			return ServerHung, join(why, "hang: "+f.hang)
		}
		if f.logSeen {
			return ServerStarting, join(why, "the log shows no ready line yet")
		}
		return ServerUnknown, why
	}
	switch {
	case answering:
		if f.hang != "" {
			return ServerHung, "hang: " + f.hang
		}
		if f.fault != "" {
			return ServerUnhealthy, "fault: " + f.fault
		}
		if f.load > 0 {
			return ServerBusy, ""
		}
		return ServerReady, ""
	case f.metrics == "refused":
		if f.phase == "crash" && !f.logGrew {
			return ServerCrashed, join("/metrics refused", "last log record is a crash")
		}
		if f.phase == "stop" && !f.logGrew {
			return ServerStopped, join("/metrics refused", "stopped on request: "+f.stop)
		}
		if f.phase == "startup" && (f.logGrew || f.logAge < quietAfter) {
			return ServerStarting, "/metrics refused while the log shows the server loading"
		}
		quiet := !f.logSeen || !f.logGrew && f.logAge >= quietAfter
		if quiet || !f.logGrew && f.waiting {
			r := "/metrics refused"
			switch {
			case !f.logSeen:
				r += ", no server log"
			case f.logAge > 0:
				r += ", log quiet " + FormatDuration(f.logAge)
			}
			if f.waiting {
				r += ", worker waiting for /health"
			}
			return ServerDown, r
		}
		return fromLog("/metrics refused; state from the log (is the server URL right?)")
	case f.metrics == "timeout":
		if f.phase == "crash" {
			return ServerCrashed, "/metrics timed out; last log record is a crash"
		}
		if f.hang != "" {
			return ServerHung, "/metrics timed out; hang: " + f.hang
		}
		return ServerUnhealthy, "/metrics timed out (3s)"
	case strings.HasPrefix(f.metrics, "http "), strings.HasPrefix(f.health, "http "):
		what := "/metrics " + strings.TrimPrefix(f.metrics, "http ")
		if f.metrics == "no_metrics" {
			what = "/health " + strings.TrimPrefix(f.health, "http ")
		}
		if f.phase == "startup" {
			return ServerStarting, what + " while the log shows the server loading"
		}
		if f.phase == "crash" {
			return ServerCrashed, what + "; last log record is a crash"
		}
		return ServerUnhealthy, what
	case f.health == "refused":
		return ServerDown, "/health refused"
	case f.health == "timeout":
		if f.hang != "" {
			return ServerHung, "/health timed out (3s); hang: " + f.hang
		}
		return ServerUnhealthy, "/health timed out (3s)"
	}
	return fromLog("")
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// serverEvents records down, up and unhealthy transitions.
func (w *Watcher) serverEvents(s *srvWatch, v Server, now time.Time) {
	was := s.was
	s.was = v.State
	label := "server"
	if n := w.named(s.name); n != "" {
		label = s.role + " " + n
	}
	if was == "" || was == v.State || v.State == ServerUnknown {
		return
	}
	switch {
	case v.State == ServerDown:
		w.event(now, "server_down", "", label+" down: "+v.Reason)
	case was == ServerDown && v.State != ServerCrashed:
		w.event(now, "server_up", "", label+" up again: "+string(v.State))
	}
	if v.State == ServerUnhealthy {
		w.event(now, "server_unhealthy", "", label+" unhealthy: "+v.Reason)
	}
	if v.State == ServerHung && s.st.hang == "" {
		// a hang only the probes saw (the log's own hang lines are events already)
		w.event(now, "server_hang", "", label+" hung: "+v.Reason)
	}
}
