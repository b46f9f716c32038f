package digest

import (
	"fmt"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// maxWaits bounds the waits kept from one worker log.
const maxWaits = 4 * perKind

// logWait is one wait on the server the worker log tells: the gate's
// "Server URL unavailable (REASON): waiting for /health", closed by
// "Server URL is back after D" (parse.FormatWaiting, FormatBack). The log
// has no times, so the wait is placed by the run's records on the
// category: the progress line before it says how many of them came first
// (done minus resumed), and no record lands while the gate is shut, so the
// wait lies in the first gap after those records as long as it lasted.
type logWait struct {
	run, cat string
	runStart time.Time     // from the run id: a wait before any category starts there
	after    int64         // the run's records on cat before it
	down     time.Duration // from the back line
	back     bool          // a back line closed it
	reason   string
	// unanswered: the worker's heartbeat ("waiting: N requests in flight,
	// oldest D"): the server took its requests and answered none for a
	// minute or more; closed by the next progress line (answers again)
	unanswered bool
	inflight   int
	oldest     time.Duration
	// placed by the records: the last one before the gap, the first after
	from, next time.Time
	placed     bool
	last       bool // the log's last wait with no back line after it
}

// waitLog follows the worker log's lines for the waits.
type waitLog struct {
	run           string
	runStart      time.Time
	cat           string
	resumed, done int64
	open          *logWait // a gate wait under way
	hb            *logWait // an unanswered spell under way
	waits         []*logWait
}

// add keeps a new wait: the latest maxWaits, as the incidents keep the
// latest of each kind.
func (wl *waitLog) add(w *logWait) *logWait {
	if len(wl.waits) >= maxWaits {
		wl.waits = append(wl.waits[:0], wl.waits[1:]...)
	}
	wl.waits = append(wl.waits, w)
	return w
}

func (wl *waitLog) feed(s string, w parse.WorkerLine) {
	if s == "" || s[0] == ' ' || s[0] == '\t' {
		return
	}
	if n, oldest, ok := parse.ParseHeartbeat(s); ok {
		wl.heartbeat(n, oldest)
		return
	}
	if run, start, ok := parse.ParseBanner(s); ok {
		wl.open, wl.hb = nil, nil // the run ended while it waited: no back line
		wl.run, wl.runStart, wl.cat, wl.resumed, wl.done = run, start, "", 0, 0
		return
	}
	switch w.Kind {
	case parse.WProcessing:
		wl.cat, wl.resumed, wl.done, wl.hb = w.Category, 0, 0, nil
	case parse.WResume:
		wl.resumed, wl.done = int64(w.Resumed), int64(w.Resumed)
	case parse.WProgress:
		wl.done = int64(w.Done)
		if wl.hb != nil { // answers landed: the spell is over
			wl.hb.back, wl.hb = true, nil
		}
	case parse.WWaiting:
		wl.waiting(w.Reason)
	case parse.WBack:
		if wl.open != nil {
			wl.open.down, wl.open.back = w.Down, true
			wl.open = nil
		}
	}
}

// heartbeat folds the worker's "waiting: N requests in flight" line: an
// unanswered spell starts, outside a gate wait, within a run.
func (wl *waitLog) heartbeat(n int, oldest time.Duration) {
	if wl.open == nil && wl.hb == nil && wl.run != "" {
		wl.hb = wl.add(&logWait{run: wl.run, cat: wl.cat, runStart: wl.runStart, after: max(wl.done-wl.resumed, 0), unanswered: true})
	}
	if wl.open == nil && wl.hb != nil {
		wl.hb.inflight, wl.hb.oldest = n, max(wl.hb.oldest, oldest)
	}
}

// waiting folds the gate's "waiting for /health": it ends an unanswered
// spell (the server stopped taking requests: the gate's wait says the
// rest) and opens a wait, within a run, unless one is open.
func (wl *waitLog) waiting(reason string) {
	if wl.hb != nil {
		wl.hb.back, wl.hb = true, nil
	}
	if wl.open != nil || wl.run == "" {
		return
	}
	wl.open = wl.add(&logWait{run: wl.run, cat: wl.cat, runStart: wl.runStart, after: max(wl.done-wl.resumed, 0), reason: reason})
}

func (wl *waitLog) close() []*logWait {
	if wl.open != nil {
		wl.open.last = true
	}
	if wl.hb != nil {
		wl.hb.last = true
	}
	return wl.waits
}

// need is the least gap in the run's records a closed wait lies in: its
// back line's length (less its rounding), or the heartbeat's minute.
func (w *logWait) need() time.Duration {
	if w.unanswered {
		return 50 * time.Second // worker.HeartbeatAfter, a minute since the last answer
	}
	return max(w.down-2*time.Second, time.Second)
}

// waitTrack follows one run's records on one category for its waits.
type waitTrack struct {
	waits []*logWait // in log order
	i     int        // the first not yet placed
	seen  int64
	prev  time.Time // the latest record so far
}

type runCat struct{ run, cat string }

// waitRecord folds a record of run on cat, finished at t, into the
// placing of the waits: a wait with a back line is in the first gap, after
// its records, at least as long as it lasted (less the rounding of D).
func (d *digester) waitRecord(cat, run string, t time.Time) {
	if len(d.waits) == 0 {
		return
	}
	if d.waitTracks == nil {
		d.waitTracks = map[runCat]*waitTrack{}
		for _, w := range d.waits {
			k := runCat{w.run, w.cat}
			if d.waitTracks[k] == nil {
				d.waitTracks[k] = &waitTrack{}
			}
			d.waitTracks[k].waits = append(d.waitTracks[k].waits, w)
		}
	}
	tr := d.waitTracks[runCat{run, cat}]
	if tr == nil {
		return
	}
	if tr.seen == 0 {
		tr.prev = d.segStart(run, cat)
	}
	if tr.i < len(tr.waits) {
		w := tr.waits[tr.i]
		if w.back && tr.seen >= w.after && !tr.prev.IsZero() && t.Sub(tr.prev) >= w.need() {
			w.from, w.next, w.placed = tr.prev, t, true
			tr.i++
		}
	}
	tr.seen++
	if t.After(tr.prev) {
		tr.prev = t
	}
}

// segStart is when run took cat up (its first start line there), else zero.
func (d *digester) segStart(run, cat string) time.Time {
	var t time.Time
	for _, sg := range d.segs {
		if sg.run == run && sg.cat == cat && (t.IsZero() || sg.start.Before(t)) {
			t = sg.start
		}
	}
	return t
}

// placeWaits makes the log's waits incidents, once the runs' ends are
// known; and the wait worker.json tells now when the log told none.
func (d *digester) placeWaits() {
	still := false
	for _, w := range d.waits {
		in, ok := d.waitIncident(w)
		if !ok {
			continue
		}
		still = still || in.Still
		d.waited = append(d.waited, in)
		if (in.End == nil || in.End.After(d.start)) && !in.Time.After(d.o.Now) {
			d.inc.add(in)
		}
	}
	if !still {
		d.workerWait()
	}
}

// waitIncident places one wait: from the run's last record before it (or
// its start on the category, or the run's start for a wait before any
// category), for as long as its back line says; with no back line, until
// the run ended, or still for the running run's last wait.
func (d *digester) waitIncident(w *logWait) (Incident, bool) {
	from := d.waitFrom(w)
	if from.IsZero() {
		return Incident{}, false
	}
	from = from.In(d.o.Loc)
	in := Incident{Time: from, Kind: KindWait, Category: w.cat, Run: w.run}
	text, now := w.words()
	r := d.runs[w.run]
	switch {
	case w.unanswered && w.back && w.placed: // answers came again: up to the next record
		next := w.next.In(d.o.Loc)
		in.End = &next
		text += ", until its next record"
	case w.unanswered && w.back:
		return Incident{}, false // no gap of a minute in its records: nothing to place
	case w.back:
		end := from.Add(w.down)
		in.End = &end
		text += ", back after " + parse.FormatDuration(w.down)
	case w.last && r != nil && r.End == EndRunning:
		in.Still, text = true, now
	case r != nil && r.EndAt != nil && r.EndAt.After(from):
		in.End = r.EndAt
		text += fmt.Sprintf(" until its run ended (%s)", EndWords(r.End))
	default:
		return Incident{}, false
	}
	in.Text = clip(text + "; placed " + d.waitWhere(w, from) + " (its log has no times)")
	return in, true
}

// words say what the wait was, and what it is while still going.
func (w *logWait) words() (text, now string) {
	if w.unanswered {
		text = fmt.Sprintf("the server answered none of the worker's %d requests in flight (the oldest %s old at the log's last word on it)",
			w.inflight, parse.FormatDuration(w.oldest))
		return text, text
	}
	return fmt.Sprintf("the worker waited on the server (%s)", shortReason(w.reason)),
		fmt.Sprintf("the worker is waiting on the server (%s)", shortReason(w.reason))
}

// waitFrom is when a wait began: where the records placed it, else the
// run's last record on its category before it, its start on the
// category, or the run's start (zero: none of them).
func (d *digester) waitFrom(w *logWait) time.Time {
	if w.placed {
		return w.from
	}
	from := w.from
	if tr := d.waitTracks[runCat{w.run, w.cat}]; tr != nil && tr.seen >= w.after {
		from = tr.prev // the run's last record there: nothing landed after it
	}
	if from.IsZero() && w.cat != "" {
		from = d.segStart(w.run, w.cat)
	}
	if from.IsZero() {
		from = w.runStart
	}
	return from
}

// waitWhere says where a wait beginning at from was placed.
func (d *digester) waitWhere(w *logWait, from time.Time) string {
	switch {
	case w.cat == "":
		return "at the run's start, before any category"
	case from.Equal(d.segStart(w.run, w.cat)):
		return "from the run's start on " + w.cat
	}
	return "after its last record on " + w.cat + ", " + from.Format("15:04:05")
}

// shortReason is the last clause of an error, which says what happened
// ("connection refused" of a dial's long chain); the log keeps it whole.
func shortReason(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		s = s[i+2:]
	}
	if i := strings.Index(s, " to GET "); i > 0 { // "server answered 503 Service Unavailable to GET URL"
		s = s[:i]
	}
	return parse.SanitizeLine([]byte(s), 60)
}

// workerWait is the worker waiting on a server that does not answer, as
// its fresh worker.json says now, when its log told no such wait.
func (d *digester) workerWait() {
	w := d.worker
	if w == nil || w.State != parse.WorkerWaitingServer || d.o.Now.Sub(w.UpdatedAt) > fresh {
		return
	}
	from := w.UpdatedAt.In(d.o.Loc)
	for _, r := range d.runs { // it waits since its last record at most
		if r.End == EndRunning && r.PID == w.PID && r.Last != nil {
			from = *r.Last
		}
	}
	d.inc.add(Incident{Time: from, Kind: KindWait, Still: true,
		Text: clip(fmt.Sprintf("the worker (pid %d) is waiting for the server %s to answer (since its last record at the latest)", w.PID, parse.Redact(w.Server)))})
}
