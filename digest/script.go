package digest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
)

// scriptTail is what the end of a log the old Python script wrote says
// (its stdout and stderr, `nohup python run_inference.py >
// logs/inference_all.log 2>&1`): it writes no runs.jsonl and no
// worker.json, so its log's last words are all there is.
type scriptTail struct {
	took     bool // it took a category up ("Processing: NAME")
	goWorker bool // a synthwatch worker's banner: the log is not the script's
	finished bool // its last word is "All categories finished"
	killed   bool // synthwatch's kill marked a pid after its last category
	tb       bool // inside a traceback
	frames   int  // its frames so far
	// fatal: its outermost frame is the script's own top level ("in
	// <module>"), an exception nothing caught, which ends the script; a
	// thread's or traceback.print_exc's is not
	fatal bool
	exc   string // the traceback's exception line, while nothing follows it
}

// traceback follows a Python traceback: its head, its frames (is the
// first one the script's top level?), the exception's own line, and a
// chained one after it. False: s is no part of one.
func (st *scriptTail) traceback(s string) bool {
	switch {
	case strings.HasPrefix(s, "Traceback (most recent call last)"):
		st.tb, st.exc, st.frames, st.fatal = true, "", 0, false
	case st.tb && (s[0] == ' ' || s[0] == '\t'):
		if f := strings.TrimSpace(s); strings.HasPrefix(f, "File ") {
			if st.frames == 0 {
				st.fatal = strings.HasSuffix(f, "in <module>")
			}
			st.frames++
		}
	case st.tb && st.exc == "":
		st.exc = s // the exception's own line ends it
	case st.exc != "" && (strings.HasPrefix(s, "During handling of the above exception") || strings.HasPrefix(s, "The above exception was the direct cause")):
		// a chained traceback follows
	default:
		return false
	}
	return true
}

func (st *scriptTail) feed(s string, w parse.WorkerLine) {
	if strings.TrimSpace(s) == "" || st.traceback(s) {
		return
	}
	st.tb, st.exc = false, ""
	if _, _, ok := parse.ParseBanner(s); ok {
		st.goWorker = true
	}
	switch w.Kind {
	case parse.WProcessing:
		st.took, st.finished, st.killed = true, false, false
	case parse.WFinished:
		st.finished = true
	case parse.WKill:
		st.killed = true
	case parse.WSeparator, parse.WOther:
	default:
		st.finished = false
	}
}

// scriptEnd says how the old script's run ended (the records with no run
// id), from its log's last words, whether a process writes the log now, and
// synthwatch's kill note and marks, judged as status judges them
// (parse.JudgeWorker). It returns false when the log is no script's.
func (d *digester) scriptEnd(r *Run) bool {
	st := d.script
	f, known, holds := d.scriptFacts()
	// a log a buffered stdout lost on SIGTERM holds the kill's marker alone
	if st.goWorker || !st.took && !f.Killed && !f.Alive || d.logTime.IsZero() && !f.Killed && !f.Alive {
		return false
	}
	r.PID = f.PID
	if f.Killed && d.note.PID == f.PID && f.PID > 0 {
		r.EndAt = later(r.EndAt, ptr(d.note.At.In(d.o.Loc)))
	}
	since := "?"
	if !d.logTime.IsZero() {
		r.EndAt = later(r.EndAt, &d.logTime)
		since = parse.FormatDuration(d.o.Now.Sub(d.logTime))
	}
	d.judgeScript(r, f, known, holds, since)
	return true
}

// scriptFacts are the old script's witnesses as status takes them with no
// worker.json: the process writing its log (else the category file its
// buffered stdout leaves it appending to: holds names which), else the
// kill note's pid. known: the host can tell who writes.
func (d *digester) scriptFacts() (f parse.WorkerFacts, known bool, holds string) {
	st := d.script
	w, known := d.writersOf()
	pids := w[filepath.Join(d.o.Root, filepath.FromSlash(parse.WorkerLogPath))]
	holds = "the script's log"
	if pid, cat := d.rawWriter(); len(pids) == 0 && pid > 0 && !d.workerPID(pid) && (d.worker == nil || d.worker.PID != pid) {
		// its stdout still in its buffer (an empty log): the category file it appends to says it runs
		pids, known, holds = []int{pid}, true, cat+"'s "+parse.RawFile
	}
	// the pid as status takes it with no worker.json: the live writer, else
	// the kill note's
	f = parse.WorkerFacts{Known: known, Alive: len(pids) > 0, Finished: st.finished, Ran: true}
	if !d.workerPID(d.note.PID) { // a note naming a worker's run is that run's
		f.PID = d.note.PID
	}
	if f.Alive {
		f.PID = pids[0]
	}
	// the marker after its last category counts too: the note may be gone
	f.Killed = st.took && st.killed || f.PID > 0 && (d.note.PID == f.PID || d.byYou[f.PID])
	return f, known, holds
}

// judgeScript words the script's end by scriptEndRows: status's judgement
// of its process, a log written lately, the traceback it ends in, else
// none (it died).
func (d *digester) judgeScript(r *Run, f parse.WorkerFacts, known bool, holds, since string) {
	st := d.script
	state, _, byYou := parse.JudgeWorker(f)
	endBy(r, scriptEndRows, scriptEndFacts{state: state, byYou: byYou, pid: f.PID, holds: holds, since: since,
		marked: st.took && st.killed, known: known, logFresh: !d.logTime.IsZero() && d.o.Now.Sub(d.logTime) <= fresh,
		fatal: st.fatal, exc: st.exc})
}

// workerPID: a run of the worker (one with a run id) had pid.
func (d *digester) workerPID(pid int) bool {
	for _, r := range d.runs {
		if r.ID != "" && r.PID == pid {
			return true
		}
	}
	return false
}

// ProcWriters are the host's processes that have each of paths open for
// writing, read from /proc/PID/fd and fdinfo in one walk of the process
// table (one a path was 80 ms a walk on a quiet host, 11 a report);
// known is false where there is no /proc. Processes of other users are
// not seen (their fd is not readable).
func ProcWriters(paths ...string) (pids map[string][]int, known bool) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return nil, false
	}
	want := map[string]string{} // absolute: as given
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			want[abs] = p
		}
	}
	pids = map[string][]int{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		seen := map[string]bool{}
		fds, _ := os.ReadDir("/proc/" + p.Name() + "/fd")
		for _, fd := range fds {
			link, err := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name())
			path, ok := want[link]
			if err != nil || !ok || seen[path] {
				continue
			}
			if info, err := os.ReadFile("/proc/" + p.Name() + "/fdinfo/" + fd.Name()); err == nil && writable(info) {
				pids[path] = append(pids[path], pid)
				seen[path] = true
			}
		}
	}
	return pids, true
}

// writable reads fdinfo's octal "flags:": open for writing or both.
func writable(info []byte) bool {
	for _, l := range strings.Split(string(info), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			f, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && f&3 != 0 // O_WRONLY 1, O_RDWR 2
		}
	}
	return false
}
