package liveness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// Worker liveness comes from the host's process table, read over SFTP:
// /proc/PID/cmdline and /proc/PID/stat of the pid worker.json names (or of
// the process found holding the worker's files) cost one round trip, in
// the poll's batch. Finding a process without worker.json (the old Python
// script under nohup) takes a scan of /proc/*/fd, one exec (~0.2-0.5 s of
// the sshd's time), so it runs only when there is no live worker to
// re-check: no worker.json or a dead pid in it, and then on evidence (the
// worker log or a raw_responses.jsonl grew) or every scanEvery.

// scanEvery is how often the process table is scanned while no worker is
// known and nothing grows.
const scanEvery = 30 * time.Second

// Proc is one process as read from /proc.
type Proc struct {
	pid     int
	start   uint64 // with pid, names one process for good (no pid reuse)
	ppid    int
	args    []string
	worker  bool   // a synthwatch worker for this root
	writes  string // the file it was found writing; "" when worker.json named it
	checked bool   // worker-ness decided (cwd and realpath read if needed)
	frozen  bool   // /proc/PID/stat said T (stopped) or t (traced) at its last read
}

// PID is the process's id.
func (p *Proc) PID() int { return p.pid }

// Start is its start time in clock ticks since boot: with the pid, it
// names one process for good.
func (p *Proc) Start() uint64 { return p.start }

// IsWorker: a synthwatch worker for this root.
func (p *Proc) IsWorker() bool { return p.worker }

// Writes is the file it was found writing ("" when worker.json named it).
func (p *Proc) Writes() string { return p.writes }

// Command is the process's command line for display: sanitised, capped.
func (p *Proc) Command() string {
	s := parse.SanitizeString(strings.Join(p.args, " "))
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// Reader reads processes on a host for one root, keeping what does not
// change for a process (its arguments, cwd and whether it is our worker).
type Reader struct {
	h        remote.Host
	root     string
	mu       sync.Mutex
	realRoot string
	cache    map[int]*Proc
	ans      *remote.ProcsAsk // the poll's batch's processes and scan (use); nil: none
}

func NewReader(h remote.Host, root string) *Reader {
	return &Reader{h: h, root: root, cache: map[int]*Proc{}}
}

// Use makes procs (the batch's Procs op) and real (its RealPath of the
// root) what r reads before the host, until use(nil, nil).
func (r *Reader) Use(procs *remote.ProcsAsk, real *remote.PathAsk) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ans = procs
	if p, ok := real.Result(); ok && p.Err == nil && r.realRoot == "" {
		r.realRoot = path.Clean(p.Path)
	}
}

// answered is what the batch read of pid, if it read it.
func (r *Reader) answered(pid int) (remote.ProcRead, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ans.Proc(pid)
}

// scan is the batch's scan (nil: none).
func (r *Reader) scan() *remote.ExecAsk {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ans.Scan()
}

// ErrUnknown: the host could not tell (a read failed for another reason
// than a missing file).
var ErrUnknown = errors.New("could not read /proc")

// Read returns the live process pid (nil if there is none).
func (r *Reader) Read(ctx context.Context, pid int) (*Proc, error) {
	return r.readAsked(ctx, pid, nil, nil)
}

// readAsked is read, its /proc entries the poll's batch's answers (cmdAsk,
// statAsk) where it gave them.
func (r *Reader) readAsked(ctx context.Context, pid int, cmdAsk, statAsk *remote.CatAsk) (*Proc, error) {
	if pid <= 0 {
		return nil, nil
	}
	dir := "/proc/" + strconv.Itoa(pid)
	var cmd, stat []byte
	var cerr, serr error
	if pr, ok := r.answered(pid); ok && cmdAsk == nil {
		cmd, cerr, stat, serr = pr.Cmdline.Data, pr.Cmdline.Err, pr.Stat.Data, pr.Stat.Err
	} else {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); cmd, cerr = ReadCat(ctx, r.h, cmdAsk, dir+"/cmdline", 64<<10) }()
		go func() { defer wg.Done(); stat, serr = ReadCat(ctx, r.h, statAsk, dir+"/stat", 4096) }()
		wg.Wait()
	}
	for _, err := range []error{serr, cerr} {
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil
		default:
			return nil, fmt.Errorf("%w: %w", ErrUnknown, err)
		}
	}
	st, err := remote.ParseProcStat(stat)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	if st.State == 'Z' || st.State == 'X' || len(cmd) == 0 {
		return nil, nil // a zombie is gone; kernel threads have no cmdline
	}
	args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
	r.mu.Lock()
	p := r.cached(pid, st, args)
	p.frozen = st.State == 'T' || st.State == 't'
	r.mu.Unlock()
	if !p.checked {
		p.worker = r.isWorker(ctx, p)
		p.checked = true
	}
	return p, nil
}

// cached is the process pid as read before, or a new entry when it is
// another: an exec keeps the pid and its start, so a launch's shell seen
// before it became the worker is judged again once its arguments are the
// worker's. The cache keeps at most 256. Called with r.mu held.
func (r *Reader) cached(pid int, st remote.ProcStat, args []string) *Proc {
	p := r.cache[pid]
	if p != nil && p.start == st.StartTime && slices.Equal(p.args, args) {
		return p
	}
	p = &Proc{pid: pid, start: st.StartTime, ppid: st.PPID, args: args}
	r.cache[pid] = p
	if len(r.cache) > 256 {
		for k := range r.cache {
			if k != pid {
				delete(r.cache, k)
				break
			}
		}
	}
	return p
}

// isWorker: the process is "synthwatch worker" with a --root that names
// this root, however spelt: relative to its cwd, with ./ or a trailing /,
// or through a symlink.
func (r *Reader) isWorker(ctx context.Context, p *Proc) bool {
	arg, ok := workerRootArg(p.args)
	if !ok {
		return false
	}
	if !path.IsAbs(arg) {
		cwd, err := r.cwd(ctx, p.pid)
		if err != nil || !path.IsAbs(cwd) {
			return false
		}
		arg = path.Join(cwd, arg)
	}
	if path.Clean(arg) == path.Clean(r.root) {
		return true
	}
	real := r.real(ctx)
	l, ok := r.h.(remote.Linker)
	if !ok || real == "" {
		return false
	}
	got, err := l.RealPath(ctx, arg)
	return err == nil && path.Clean(got) == real
}

// cwd is the process's working folder: as the batch read it, else read.
func (r *Reader) cwd(ctx context.Context, pid int) (string, error) {
	if pr, ok := r.answered(pid); ok && pr.HasCwd {
		return pr.Cwd.Path, pr.Cwd.Err
	}
	l, ok := r.h.(remote.Linker)
	if !ok {
		return "", errors.New("the host cannot read links")
	}
	return l.ReadLink(ctx, "/proc/"+strconv.Itoa(pid)+"/cwd")
}

// KnownReal is the resolved root if it was resolved already ("": not yet).
func (r *Reader) KnownReal() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.realRoot
}

// real is the root with symlinks resolved ("" if the host cannot say).
func (r *Reader) real(ctx context.Context) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.realRoot == "" {
		if l, ok := r.h.(remote.Linker); ok {
			if got, err := l.RealPath(ctx, r.root); err == nil {
				r.realRoot = path.Clean(got)
			}
		}
	}
	return r.realRoot
}

// workerRootArg finds "worker" and its --root value in a command line:
// "--root DIR" or "--root=DIR" (the last one wins, as with the flag package).
func workerRootArg(args []string) (string, bool) {
	worker, root, found := false, "", false
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case !worker && a == "worker":
			worker = true
		case !worker:
		case a == "--":
			i = len(args)
		case (a == "--root" || a == "-root") && i+1 < len(args):
			root, found = args[i+1], true
			i++
		case strings.HasPrefix(a, "--root="):
			root, found = a[len("--root="):], true
		case strings.HasPrefix(a, "-root="):
			root, found = a[len("-root="):], true
		}
	}
	return root, worker && found && root != ""
}

// isWorkerCmdline checks /proc/PID/cmdline ("BIN worker --root ROOT ...")
// for an absolute ROOT spelt any way path.Clean folds; relative roots and
// symlinks need the process's cwd and the host (Reader.isWorker).
func isWorkerCmdline(b []byte, root string) bool {
	arg, ok := workerRootArg(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"))
	return ok && path.IsAbs(arg) && path.Clean(arg) == path.Clean(root)
}

// writerPatterns are the files a worker writes: its log and every
// category's raw_responses.jsonl, as find -lname patterns on real paths.
func (r *Reader) writerPatterns(ctx context.Context, workerLog string) []string {
	l, _ := r.h.(remote.Linker)
	return r.PatternsAt(ctx, r.real(ctx), workerLog, l)
}

// PatternsAt are writerPatterns with the root resolved to real ("": as
// spelt), and a worker log outside the root resolved by l (nil: as spelt).
func (r *Reader) PatternsAt(ctx context.Context, real, workerLog string, l remote.Linker) []string {
	if real == "" {
		real = path.Clean(r.root)
	}
	pats := []string{parse.Layout{Root: remote.GlobEscape(real)}.Raw("*")}
	logp := path.Clean(workerLog)
	if strings.HasPrefix(logp, path.Clean(r.root)+"/") {
		logp = path.Join(real, strings.TrimPrefix(logp, path.Clean(r.root)+"/"))
	} else if l != nil {
		if got, err := l.RealPath(ctx, logp); err == nil {
			logp = got
		}
	}
	return append(pats, remote.GlobEscape(logp))
}

// Writers scans the process table for processes writing the worker's
// files, one per process tree (a child that inherited the parent's stdout
// is the parent's), oldest first. Our own helper shells are left out. The
// batch's scan (use) stands for it when it scanned for the same files.
func (r *Reader) Writers(ctx context.Context, workerLog string) ([]*Proc, error) {
	hs, err := remote.FindHolders(ctx, r.h, r.writerPatterns(ctx, workerLog), r.scan())
	if err != nil {
		return nil, err
	}
	what := map[int]string{}
	var pids []int
	for _, h := range hs {
		if !h.Writes() {
			continue
		}
		if _, ok := what[h.PID]; !ok {
			pids = append(pids, h.PID)
			what[h.PID] = h.Target
		} else if path.Base(h.Target) == parse.RawFile {
			what[h.PID] = h.Target // the data file says more than the log
		}
	}
	procs := make([]*Proc, len(pids))
	var wg sync.WaitGroup
	for i, pid := range pids {
		wg.Add(1)
		go func() { defer wg.Done(); procs[i], _ = r.Read(ctx, pid) }()
	}
	wg.Wait()
	live := map[int]bool{}
	for _, p := range procs {
		if p != nil {
			live[p.pid] = true
		}
	}
	var out []*Proc
	for _, p := range procs {
		if p == nil || live[p.ppid] || ourHelper(p.args) {
			continue
		}
		p.writes = what[p.pid]
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].worker != out[j].worker {
			return out[i].worker
		}
		return out[i].start < out[j].start
	})
	return out, nil
}

// ourHelper: the shells the actions run (they append a line to the log),
// and our host agent ("synthwatch agent --serve …"), which reads the
// root's files and writes none: CI twice saw a scan name an agent (its own
// or a fleet's second host's) as the root's writer, and a root nobody
// works on read "running".
func ourHelper(args []string) bool {
	for i, a := range args {
		if a == "synthwatch-kill" || a == "synthwatch-launch" || a == "synthwatch-holders" {
			return true
		}
		if a == "agent" && i+1 < len(args) && args[i+1] == "--serve" {
			return true
		}
	}
	return false
}
