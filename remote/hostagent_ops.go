package remote

// The agent's ops, each the Go form of fallback.sh's function of the same
// name: the records they write are the fallback's, so one parse reads both.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fileStat is one path's S record's figures: sty f, d or o.
type fileStat struct {
	sty   string
	size  int64
	mtime int64
}

// stats writes the S records of paths, as fallback.sh's stats; nil for a
// path that is gone.
func (r *recorder) stats(paths ...string) []*fileStat {
	out := make([]*fileStat, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			r.rec("S", gone(p), 0, 0, 0, p, failText(p, err))
			continue
		}
		st := &fileStat{sty: "o", size: fi.Size(), mtime: fi.ModTime().Unix()}
		switch rawMode(fi) & syscall.S_IFMT {
		case syscall.S_IFREG:
			st.sty = "f"
		case syscall.S_IFDIR:
			st.sty = "d"
		case syscall.S_IFIFO:
			st.sty = "p"
		}
		out[i] = st
		r.rec("S", st.sty, st.size, st.mtime, 0, p, nil)
	}
	return out
}

// stat1 is opstat1: p's S record, and its size when it is a regular file.
func (r *recorder) stat1(p string) (int64, bool) {
	st := r.stats(p)[0]
	if st == nil || st.sty != "f" {
		return 0, false
	}
	return st.size, true
}

// rd writes the bytes [off, off+n) of p, known to be there: a file that
// shrank meanwhile leaves the record short, which the parse refuses.
func (r *recorder) rd(p string, off, n int64, eof bool) {
	if syscall.Access(p, 4) != nil {
		r.rec("R", "err", off, 0, 0, p, []byte(p+": Permission denied\n"))
		return
	}
	e := int64(0)
	if eof {
		e = 1
	}
	r.hdr("R", "ok", off, e, 0, p, int(n))
	if f, err := openRegular(p); err == nil { // replaced by a FIFO since its stat: the record is cut, not hung
		r.w.Grow(int(n)) // the bytes known: room once, not the buffer doubled as they come
		io.Copy(r.w, io.NewSectionReader(f, off, n))
		f.Close()
	}
	r.fin()
}

// tailAt is fallback.sh's tailat: offs is an offset, or -N: N bytes before the end.
func (r *recorder) tailAt(p string, size int64, offs string, maxPer int64) {
	off := atoi(offs)
	if off < 0 {
		off = max(size+off, 0)
	}
	if size < off {
		off = 0
	}
	if size == off {
		return
	}
	n, eof := size-off, true
	if n > maxPer {
		n, eof = maxPer, false
	}
	r.rd(p, off, n, eof)
	if off > 0 {
		if size < 64 {
			r.rd(p, 0, size, true)
		} else {
			r.rd(p, 0, 64, false)
		}
	}
}

type thenArgs struct {
	from  int64
	index string
	argv  []string
}

// count is fallback.sh's cnt.
func (r *recorder) count(p string, size, off, k, above int64, th *thenArgs) {
	if size < off {
		off, k = 0, 0
	}
	n := size - off
	if n == 0 {
		return
	}
	if n <= above {
		r.rd(p, off-k, n+k, true)
		return
	}
	if k > 0 {
		r.rd(p, off-k, k, false)
	}
	lines, got := countLines(p, off, n)
	if got != n {
		r.rec("N", "err", off+1, n, 0, p, fmt.Appendf(nil, "read %d of %d bytes from byte %d\n", got, n, off+1))
		return
	}
	r.rec("N", "ok", off+1, n, lines, p, nil)
	if th != nil {
		argv := append(append([]string(nil), th.argv...), p, strconv.FormatInt(th.from+1, 10), strconv.FormatInt(size-th.from, 10))
		code, stdout, stderr := r.run(argv)
		r.rec("Y", "ok", int64(code), int64(len(stdout)), size-th.from, th.index, append(stdout, stderr...))
	}
	b := int64(4096)
	if lastByte(p, size) == '\n' {
		b = 129
	}
	b = min(b, size)
	r.rd(p, size-b, b, true)
}

// countLines counts the newlines in [off, off+n) of p, and the bytes read.
func countLines(p string, off, n int64) (lines, got int64) {
	f, err := openRegular(p)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	sr := io.NewSectionReader(f, off, n)
	for {
		m, err := sr.Read(buf)
		lines += int64(bytes.Count(buf[:m], []byte{'\n'}))
		got += int64(m)
		if err != nil {
			return lines, got
		}
	}
}

func lastByte(p string, size int64) byte {
	f, err := openRegular(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	var b [1]byte
	if size < 1 {
		return 0
	}
	if _, err := f.ReadAt(b[:], size-1); err != nil {
		return 0
	}
	return b[0]
}

// cat is docat: a whole small file of unknown length (/proc), up to max.
func (r *recorder) cat(p string, limit int64) {
	data, err := readUpTo(p, limit)
	if err != nil {
		var pe *fs.PathError
		if errors.Is(err, ErrNotRegular) && errors.As(err, &pe) {
			err = pe.Err // the record names the path: as the shell's words
		}
		r.rec("R", gone(p), 0, 0, 0, p, failText(p, err))
		return
	}
	eof := int64(0)
	if int64(len(data)) < limit {
		eof = 1
	}
	r.rec("R", "ok", 0, eof, 0, p, data)
}

// readUpTo reads up to limit bytes of p, a regular file: a FIFO or a
// directory in its place is an error naming it, never a read that waits.
func readUpTo(p string, limit int64) ([]byte, error) {
	f, err := openRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// subdirs are dir's folders in the order sh's "$dir"/*/ "$dir"/.[!.]*/
// "$dir"/..?*/ gives them, each spelt DIR/NAME.
func subdirs(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var plain, dot, dotdot []string
	for _, e := range ents {
		n := e.Name()
		switch {
		case !strings.HasPrefix(n, "."):
			plain = append(plain, n)
		case strings.HasPrefix(n, ".."):
			if len(n) > 2 {
				dotdot = append(dotdot, n)
			}
		case len(n) > 1:
			dot = append(dot, n)
		}
	}
	var out []string
	for _, group := range [][]string{plain, dot, dotdot} {
		sort.Slice(group, func(i, j int) bool { return group[i]+"/" < group[j]+"/" }) // the glob sorts NAME/: "a b/" before "a/"
		for _, n := range group {
			if fi, err := os.Stat(dir + "/" + n); err == nil && fi.IsDir() {
				out = append(out, n)
			}
		}
	}
	return out
}

// glob is doglob: the DIR/*/NAME that exist (or are links), NUL ended.
func (r *recorder) glob(pattern, dir, name string) {
	var data []byte
	for _, d := range subdirs(dir) {
		f := dir + "/" + d + "/" + name
		if _, err := os.Lstat(f); err == nil {
			data = append(append(data, f...), 0)
		}
	}
	r.rec("G", "ok", 0, 0, 0, pattern, data)
}

// realPath is oprealpath: cd -P and pwd -P.
func (r *recorder) realPath(p string) {
	abs := p
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			r.rec("P", gone(p), 0, 0, 0, p, errText(err))
			return
		}
		abs = wd + "/" + p
	}
	real, err := filepath.EvalSymlinks(abs)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(real); err == nil && !fi.IsDir() {
			err = fmt.Errorf("cd: %s: Not a directory", p)
		} else if err == nil && syscall.Access(real, 1) != nil { // cd needs search permission
			err = fmt.Errorf("cd: %s: Permission denied", p)
		}
	}
	if err != nil {
		r.rec("P", gone(p), 0, 0, 0, p, errText(err))
		return
	}
	r.rec("P", "ok", 0, 0, 0, p, []byte(strings.TrimRight(real, "\n")))
}

// each is dispatch's each: for every folder under DIR, its tails' and
// counts' files stated at once, then read (eachdir).
func (r *recorder) each(a []string) error {
	bad := errors.New("synthwatch-agent: op each: bad arguments")
	if len(a) < 2 {
		return bad
	}
	dir, nt := a[0], int(atoi(a[1]))
	a = a[2:]
	type spec struct {
		tail        bool
		name        string
		back, maxPr int64
	}
	var specs []spec
	if len(a) < 3*nt+1 {
		return bad
	}
	for range nt {
		specs = append(specs, spec{tail: true, name: a[0], back: atoi(a[1]), maxPr: atoi(a[2])})
		a = a[3:]
	}
	nc := int(atoi(a[0]))
	a = a[1:]
	if len(a) < 2*nc {
		return bad
	}
	for range nc {
		specs = append(specs, spec{name: a[0], back: atoi(a[1])})
		a = a[2:]
	}
	for _, c := range subdirs(dir) {
		paths := make([]string, len(specs))
		for i, sp := range specs {
			paths[i] = dir + "/" + c + "/" + sp.name
		}
		sts := r.stats(paths...)
		for i, sp := range specs {
			if sts[i] == nil || sts[i].sty != "f" {
				continue
			}
			if sp.tail {
				r.tailAt(paths[i], sts[i].size, "-"+strconv.FormatInt(sp.back, 10), sp.maxPr)
			} else {
				r.count(paths[i], sts[i].size, 0, 0, sp.back, nil)
			}
		}
	}
	return nil
}

// run runs argv as the shell's runn would: its exit code (127 when it is
// not found, 126 when it cannot run, 128+N when signal N ended it), its
// stdout and its stderr; its stdin is /dev/null.
//
// Its output goes to files, read once it has exited, as the shell's
// redirections do: a job it leaves in the background holds up nothing.
//
// It ends with ctx, and after execLimit, as the shell's timeout(1) ends
// it: a command that hangs leaves nothing behind on the host.
func run(ctx context.Context, argv []string) (int, []byte, []byte) {
	if len(argv) == 0 {
		return 0, nil, nil
	}
	select { // at most runMax at a time: a request of 10,000 ops forks a few
	case runSlots <- struct{}{}:
		defer func() { <-runSlots }()
	case <-ctx.Done():
		return 128 + int(syscall.SIGTERM), nil, []byte("synthwatch-agent: the request ended before this command ran\n")
	}
	ctx, cancel := context.WithTimeout(ctx, execLimit)
	defer cancel()
	stdout, err1 := unlinkedTemp()
	stderr, err2 := unlinkedTemp()
	if err1 != nil || err2 != nil {
		return 126, nil, fmt.Appendf(nil, "synthwatch-agent: temp files: %v\n", errors.Join(err1, err2))
	}
	defer stdout.Close()
	defer stderr.Close()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // as timeout(1): TERM, then KILL
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	read := func(f *os.File) []byte {
		f.Seek(0, io.SeekStart)
		b, _ := io.ReadAll(f)
		return b
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, read(stdout), read(stderr)
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), read(stdout), read(stderr)
		}
		return ee.ExitCode(), read(stdout), read(stderr)
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		return 127, nil, fmt.Appendf(nil, "synthwatch-agent: %s: not found\n", argv[0])
	default:
		return 126, nil, fmt.Appendf(nil, "synthwatch-agent: %s: %v\n", argv[0], err)
	}
}

// runSlots bounds the commands the agent runs at once (the shell's spawnmax).
var runSlots = make(chan struct{}, 16)

// execLimit bounds a command an op runs (the shell's timeout(1) too): a
// poll's request never waits longer, so a hung one only costs its slot.
const execLimit = 100 * time.Second

// unlinkedTemp is a temp file already removed: it is gone with its last
// descriptor, whatever becomes of the agent.
func unlinkedTemp() (*os.File, error) {
	f, err := os.CreateTemp("", "synthwatch-agent-")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

// exec is doexec: argv's X record under its index.
func (r *recorder) exec(index string, argv []string) ([]byte, int) {
	code, stdout, stderr := r.run(argv)
	r.rec("X", "ok", int64(code), int64(len(stdout)), 0, index, append(stdout, stderr...))
	return stdout, code
}

// proc is doproc: a process's cmdline, stat and cwd.
func (r *recorder) proc(pid string) {
	r.cat("/proc/"+pid+"/cmdline", 65536)
	r.cat("/proc/"+pid+"/stat", 4096)
	if l, err := os.Readlink("/proc/" + pid + "/cwd"); err == nil {
		r.rec("L", "ok", 0, 0, 0, "/proc/"+pid+"/cwd", []byte(strings.TrimRight(l, "\n")))
	}
}

// statePid is the first "pid": N in a state file, as doprocs' tr and sed find it.
var statePid = regexp.MustCompile(`^[ \t\n\v\f\r]*"pid"[ \t\n\v\f\r]*:[ \t\n\v\f\r]*([0-9]+)`)

// procs is doprocs: the state file's process, or, when that is no live
// worker, the scan's and every process it found.
func (r *recorder) procs(stateFile, index string, scan []string) {
	pid := ""
	if b, err := readUpTo(stateFile, 4<<20); err == nil {
		b = bytes.Map(func(c rune) rune {
			if c == ',' || c == '{' || c == '}' {
				return '\n'
			}
			return c
		}, b)
		for _, line := range bytes.Split(b, []byte{'\n'}) {
			if m := statePid.FindSubmatch(line); m != nil {
				pid = string(m[1])
				break
			}
		}
	}
	if pid != "" {
		r.proc(pid)
		if cl, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil && bytes.Contains(bytes.ReplaceAll(cl, []byte{0}, []byte{' '}), []byte(" worker ")) {
			return
		}
	}
	code, stdout, stderr := r.run(scan)
	stdout = notSelf(stdout)
	r.rec("X", "ok", int64(code), int64(len(stdout)), 0, index, append(stdout, stderr...))
	seen := map[string]bool{}
	var pids []string
	for _, line := range strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n") {
		p, _, _ := strings.Cut(line, " ")
		p = strings.Trim(p, " \t")
		if f := strings.Fields(line); len(f) > 2 {
			if fl, err := strconv.ParseUint(f[2], 8, 64); err == nil && fl&3 == 0 {
				continue // it only reads: nobody's worker (as fallback.sh)
			}
		}
		if p != "" && !seen[p] {
			seen[p] = true
			pids = append(pids, p)
		}
	}
	sort.Strings(pids)
	for _, p := range pids {
		if p != pid {
			r.proc(p)
		}
	}
}

// notSelf drops the scan's lines of the agent's own process: it reads the
// root's files while the scan runs (a request's ops run at once), so the
// scan may name it as a holder, and its record (its command line holds
// the first request, 2.6 KB in base64) would cross the link for the
// laptop to drop it (pipeline's ourHelper). It writes none of them.
func notSelf(scan []byte) []byte {
	self := strconv.Itoa(os.Getpid())
	var out []byte
	for _, line := range bytes.SplitAfter(scan, []byte("\n")) {
		p, _, _ := bytes.Cut(bytes.TrimLeft(line, " \t"), []byte(" "))
		if string(bytes.TrimRight(p, " \t\n")) != self {
			out = append(out, line...)
		}
	}
	return out
}
