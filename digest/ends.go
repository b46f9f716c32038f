package digest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// How a run ended (Run.End).
const (
	EndFinished = "finished"          // every category done
	EndByYou    = "stopped_by_you"    // synthwatch's kill (the CLI's or the dashboard's) stopped it
	EndSignal   = "stopped_by_signal" // a stop signal someone else sent
	EndFailed   = "failed"            // an error ended it
	EndDied     = "died"              // no end line and no later word from it: the process is gone
	EndRunning  = "running"           // alive when the digest ran
	EndUnknown  = "unknown"           // records with no run id: nothing to follow
)

// fresh is how recent worker.json must be for its worker to be alive: it
// rewrites the file every 2 s while it lives.
const fresh = time.Minute

// endLine keeps a run's own end line.
func (d *digester) endLine(r *Run, rl parse.RunLine) {
	t, err := time.Parse(time.RFC3339Nano, rl.EndedAt)
	if err != nil {
		return
	}
	t = t.In(d.o.Loc)
	r.ended, r.endLine = &t, rl
}

// readWorkerLog reads the worker log once, before the records: which pids
// synthwatch's kill stopped (the markers it appends before it signals, and
// the kill note it leaves: the last kill's, with its time), the last two
// categories the log says the worker took up, when the log was last
// written, and the waits on the server it tells (placed later by the
// records, as the log has no times).
func (d *digester) readWorkerLog() {
	d.byYou = map[int]bool{}
	path := filepath.Join(d.o.Root, filepath.FromSlash(parse.WorkerLogPath))
	var wl waitLog
	n, _, err := eachLine(path, func(line []byte, _ bool) {
		line = bytes.TrimRight(line, "\r")
		cur := ""
		if len(d.took) > 0 {
			cur = d.took[len(d.took)-1]
		}
		if !read(line, d.script.tb) {
			if len(bytes.TrimSpace(line)) > 0 {
				s := string(line)
				d.lf.fold(d.lf.line(s), cur) // its failures, the header's end
			}
			return
		}
		s := string(line)
		w := parse.WorkerLine{Kind: parse.WOther, Text: s}
		if told(line) {
			w = parse.ParseWorkerLine(s) // once a line, for every reader below
			d.lf.fold(w, cur)
		} else {
			d.lf.fold(d.lf.line(s), cur)
		}
		switch w.Kind {
		case parse.WKill:
			d.byYou[w.PID] = true
		case parse.WProcessing:
			d.took = append(d.took[max(len(d.took)-1, 0):], w.Category) // the last two
		case parse.WPrompts, parse.WResume:
			if d.logTarget == nil {
				d.logTarget = map[string]int{}
			}
			d.logTarget[w.Category] = w.Prompts // evidence for the target's cross-check, the last one the log says
		}
		wl.feed(s, w)
		d.script.feed(s, w)
	})
	d.count(n, err)
	d.waits = wl.close()
	if fi, err := os.Stat(path); err == nil {
		d.logTime = fi.ModTime().In(d.o.Loc)
	}
	if b, err := parse.ReadRegular(filepath.Join(d.o.Root, filepath.FromSlash(parse.KillNotePath))); err == nil {
		if kn, ok := parse.ParseKillNote(b); ok {
			d.note = kn
			d.byYou[kn.PID] = true
		}
	}
}

// told: a worker log line that may be one of the kinds the digest reads
// (a category taken up or resumed, progress, the gate, the end, a kill
// mark). The rest, a long night's failures, are not parsed: a category
// line's scan costs most of a log's reading.
func told(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	return b[0] >= '0' && b[0] <= '9' || bytes.HasPrefix(b, []byte("Processing: ")) || bytes.HasSuffix(b, []byte(" prompts")) || bytes.HasPrefix(b, []byte("Server ")) ||
		bytes.HasPrefix(b, []byte(parse.KillMarker)) || bytes.HasPrefix(b, []byte("All categories finished")) || bytes.Contains(b, []byte(" resumed, "))
}

// read: a line some reader of the worker log wants: one told, a run's
// banner, the worker's heartbeat, a traceback's start (and every line of
// one, while in it). Others are skipped without a copy.
func read(b []byte, inTraceback bool) bool {
	return inTraceback || told(b) || bytes.HasPrefix(b, []byte("synthwatch worker ")) || bytes.HasPrefix(b, []byte("waiting: ")) ||
		bytes.HasPrefix(b, []byte("Traceback "))
}

// runEnds says how each run ended: from its own end line where it wrote
// one, else inferred from worker.json, synthwatch's kill marks and the
// absence of any later word; End.How says which.
func (d *digester) runEnds() {
	latest := map[int]*Run{} // per pid, the run that started last: worker.json's
	for _, r := range d.runs {
		if l := latest[r.PID]; l == nil || runOrder(*l).Before(runOrder(*r)) {
			latest[r.PID] = r
		}
	}
	took := map[string]time.Time{} // per run, its latest start on a category
	for _, sg := range d.segs {
		took[sg.run] = maxT(took[sg.run], sg.start)
	}
	for _, r := range d.runs {
		r.EndAt = later(r.Started, r.Last)
		if t, ok := took[r.ID]; ok {
			r.EndAt = later(r.EndAt, &t)
		}
		if r.ID == "" && d.scriptEnd(r) {
			continue
		}
		d.runEnd(r, latest[r.PID] == r)
	}
}

// runEnd decides how a run ended by runEndRows, from its witnesses:
// its own end line, worker.json (when it is this run's: latest, the pid's
// run that started last), synthwatch's kill mark. Its end moves to the
// latest of them.
func (d *digester) runEnd(r *Run, latest bool) {
	endBy(r, runEndRows, d.runEndFacts(r, latest))
}

// runEndFacts gathers a run's witnesses of its end, moving its EndAt to
// the kill note's time when the note names it, and to its end line's, or
// else worker.json's.
func (d *digester) runEndFacts(r *Run, latest bool) runEndFacts {
	if r.ID == "" || r.ID == otherRuns {
		return runEndFacts{noID: true}
	}
	f := runEndFacts{mark: d.byYou[r.PID], pid: r.PID}
	if d.note.PID == r.PID && d.note.PID != 0 {
		r.EndAt = later(r.EndAt, ptr(d.note.At.In(d.o.Loc)))
	}
	ws := d.worker
	switch {
	case r.ended != nil:
		r.EndAt = later(r.EndAt, r.ended)
		f.ended, f.line, f.lineCause = true, r.endLine.End, r.endLine.Cause
	case ws != nil && ws.PID == r.PID && latest:
		f.updated = ws.UpdatedAt.In(d.o.Loc)
		r.EndAt = later(r.EndAt, &f.updated)
		f.json, f.phase, f.jsonError, f.age = true, ws.State, ws.Error, d.o.Now.Sub(f.updated)
		f.gone = f.age <= fresh && d.gone(ws.PID)
	}
	return f
}

// gone: the host says pid is not alive (false when it cannot tell).
func (d *digester) gone(pid int) bool {
	if d.o.Alive == nil {
		return false
	}
	alive, known := d.o.Alive(pid)
	return known && !alive
}

// ProcAlive reads /proc: pid is alive when /proc/PID/stat exists and is
// no zombie; known is false where there is no /proc.
func ProcAlive(pid int) (alive, known bool) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return false, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false, true
	}
	// "PID (COMM) STATE ...": COMM may hold spaces and parentheses
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z', true
}

// endWords are how a run's end reads in a sentence.
var endWords = map[string]string{
	EndFinished: "finished", EndByYou: "stopped by you, through synthwatch kill", EndSignal: "stopped by a signal someone else sent",
	EndFailed: "failed", EndDied: "died", EndRunning: "is running", EndUnknown: "ended unknown",
}

// EndWords is a run's end as the report writes it.
func EndWords(end string) string {
	if w, ok := endWords[end]; ok {
		return w
	}
	return end
}

// runIncidents are the runs starting, from runs.jsonl, and ending, at the
// time of their last evidence with how they ended.
func (d *digester) runIncidents() {
	for _, r := range d.s.Runs {
		if r.ID == otherRuns || r.ID == "" && r.End == EndUnknown {
			continue
		}
		if r.Started != nil && d.inWindow(*r.Started) {
			d.inc.add(Incident{Time: *r.Started, Kind: KindRunStart, Run: r.ID, Text: fmt.Sprintf("run %s started (pid %d, config %s)", r.ID, r.PID, r.Config)})
		}
		if r.End == EndRunning || r.EndAt == nil || !d.inWindow(*r.EndAt) {
			continue
		}
		d.inc.add(d.runEndIncident(r))
	}
}

// runEndIncident is a run's end as the report tells it: how it ended,
// how long the worker was down after a death, the cause, whether it was
// inferred, and its records.
func (d *digester) runEndIncident(r Run) Incident {
	in := Incident{Time: *r.EndAt, Kind: KindRunEnd, Run: r.ID}
	text := fmt.Sprintf("run %s (pid %d) %s", r.ID, r.PID, EndWords(r.End))
	if r.ID == "" {
		text = "the old script's run " + EndWords(r.End)
		if r.PID != 0 {
			text = fmt.Sprintf("the old script's run (pid %d) %s", r.PID, EndWords(r.End))
		}
	}
	if r.End == EndDied { // the worker was down until the next run, if one came
		if next := d.nextRun(r); next != nil {
			in.End = next.Started
			text += fmt.Sprintf(", down until run %s started", next.ID)
		}
	}
	if r.EndCause != "" && r.End != EndByYou {
		text += " (" + r.EndCause + ")"
	}
	if strings.HasPrefix(r.EndHow, "inferred") {
		text += " (inferred)"
	}
	text += fmt.Sprintf("; %s: %s", parse.Plural(r.Records, "record"), byCategory(r.ByCategory))
	in.Text = clip(text)
	return in
}

func later(p, q *time.Time) *time.Time {
	if q == nil {
		return p
	}
	return maxTime(p, *q)
}

func ptr(t time.Time) *time.Time { return &t }

// nextRun is the first run that started after r's last evidence.
func (d *digester) nextRun(r Run) *Run {
	var next *Run
	for i, o := range d.s.Runs {
		if o.Started != nil && o.Started.After(*r.EndAt) && (next == nil || o.Started.Before(*next.Started)) {
			next = &d.s.Runs[i]
		}
	}
	return next
}
