package remote

import (
	"path"
	"strconv"
	"strings"
)

// An op's handle. The part of the pipeline that asks an op keeps its
// handle and reads the answer from it once the batch ran: an answer is
// the op's own, never a later call's argv matched against a cache. An
// unanswered handle (the batch failed, the record was cut, no batch ran:
// nil) says so, and the part reads for itself.

// ExecAsk is an Exec op: argv's exit code, stdout and stderr.
type ExecAsk struct {
	argv []string
	res  ExecResult
	ok   bool
}

// Result is the command's answer, ok when the batch answered it.
func (x *ExecAsk) Result() (ExecResult, bool) {
	if x == nil || !x.ok {
		return ExecResult{}, false
	}
	return x.res, true
}

// Argv is the command the op runs.
func (x *ExecAsk) Argv() []string { return x.argv }

// CatResult is a Cat op's answer: the file's first bytes, or why not.
type CatResult struct {
	Data []byte
	Err  error // fs.ErrNotExist for a missing file
}

// CatAsk is a Cat op: [0, max) of a small whole file.
type CatAsk struct {
	path string
	max  int
	res  CatResult
	ok   bool
}

// Result is the file's bytes or its error, ok when the batch answered it.
func (c *CatAsk) Result() (CatResult, bool) {
	if c == nil || !c.ok {
		return CatResult{}, false
	}
	return c.res, true
}

// GlobResult is a Glob op's answer: the paths that exist.
type GlobResult struct {
	Paths []string
	Err   error
}

// GlobAsk is a Glob op: dir/*/name.
type GlobAsk struct {
	pattern string
	res     GlobResult
	ok      bool
}

// Result is the paths found, ok when the batch answered it.
func (g *GlobAsk) Result() (GlobResult, bool) {
	if g == nil || !g.ok {
		return GlobResult{}, false
	}
	return g.res, true
}

// PathResult is a RealPath op's answer: the path, symlinks resolved.
type PathResult struct {
	Path string
	Err  error
}

// PathAsk is a RealPath op.
type PathAsk struct {
	path string
	res  PathResult
	ok   bool
}

// Result is the resolved path, ok when the batch answered it.
func (r *PathAsk) Result() (PathResult, bool) {
	if r == nil || !r.ok {
		return PathResult{}, false
	}
	return r.res, true
}

// ProcsAsk is a Procs op: the holders' scan when it ran, and the /proc
// entries the host read of the processes worker.json and the scan named.
type ProcsAsk struct {
	scan  *ExecAsk
	procs map[int]ProcRead
}

// ProcRead is one process's /proc entries as a batch read them.
type ProcRead struct {
	Cmdline, Stat CatResult
	Cwd           PathResult // its cwd link's target
	HasCwd        bool       // the host read the link (a gone process has none)
}

// Scan is the holders' scan (nil: no Procs op).
func (p *ProcsAsk) Scan() *ExecAsk {
	if p == nil {
		return nil
	}
	return p.scan
}

// Proc is what the batch read of pid, ok when it read its cmdline and stat.
func (p *ProcsAsk) Proc(pid int) (ProcRead, bool) {
	if p == nil {
		return ProcRead{}, false
	}
	r, ok := p.procs[pid]
	return r, ok
}

// set keeps every process whose cmdline and stat the answer holds (a
// Cat of the same file is as true), with its cwd when read.
func (p *ProcsAsk) set(a *answers) {
	p.procs = map[int]ProcRead{}
	for name, rs := range a.reads {
		pid, ok := procFile(name, "cmdline")
		st, sok := a.reads[path.Join("/proc", strconv.Itoa(pid), "stat")]
		if !ok || !sok || len(rs) == 0 || len(st) == 0 || rs[0].off != 0 || st[0].off != 0 {
			continue
		}
		r := ProcRead{Cmdline: CatResult{Data: rs[0].data, Err: rs[0].err}, Stat: CatResult{Data: st[0].data, Err: st[0].err}}
		if l, ok := a.links[path.Join("/proc", strconv.Itoa(pid), "cwd")]; ok {
			r.Cwd, r.HasCwd = PathResult{Path: l.target, Err: l.err}, true
		}
		p.procs[pid] = r
	}
}

// procFile is the pid of /proc/PID/name.
func procFile(p, name string) (int, bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return 0, false
	}
	n, ok := strings.CutSuffix(rest, "/"+name)
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(n)
	return pid, err == nil && pid > 0
}

// ThenAsk is a CountThen op's command: run when the host counted the
// new bytes itself, over [from, from+n) of the counted file.
type ThenAsk struct {
	argv []string
	path string
	from int64
	res  ExecResult
	n    int64
	ok   bool
}

// Result is the command's answer and the bytes it ran over (from the
// op's from to where the count ended), ok when the host ran it.
func (t *ThenAsk) Result() (res ExecResult, n int64, ok bool) {
	if t == nil || !t.ok {
		return ExecResult{}, 0, false
	}
	return t.res, t.n, true
}

// setExec answers the exec op i (an X record).
func (b *Batch) setExec(a *answers, i int, res ExecResult) {
	x := b.execs[i]
	x.res, x.ok = res, true
	a.execs[CommandLine(x.argv...)] = res
}

// setThen answers the command of CountThen i (a Y record), run over n bytes.
func (b *Batch) setThen(a *answers, i int, res ExecResult, n int64) {
	th := b.thens[i]
	th.res, th.n, th.ok = res, n, true
	argv := append(append([]string(nil), th.argv...), th.path, strconv.FormatInt(th.from+1, 10), strconv.FormatInt(n, 10))
	a.execs[CommandLine(argv...)] = res
}

// setCats answers each Cat op from its read: an R record at 0 of its
// path that is the cat's shape (max bytes, or to the end, or an error).
// A Tail's head read of the same file (64 bytes) is another unless it
// holds the same bytes; a procs op's read of the same /proc file is the same.
func (b *Batch) setCats(a *answers) {
	for _, c := range b.cats {
		for _, r := range a.reads[path.Clean(c.path)] {
			if r.off == 0 && (r.err != nil || r.eof || len(r.data) == c.max) {
				c.res, c.ok = CatResult{Data: r.data, Err: r.err}, true
				break
			}
		}
	}
}
