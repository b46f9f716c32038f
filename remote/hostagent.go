package remote

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/synthwatch/synthwatch/remote/agentproto"
)

// AgentProto is the version of the agent's protocol and answers: a
// deployed synthwatch serves as the agent (ServeAgent) only when it speaks
// the same one, so a dashboard never talks to an agent that answers
// otherwise; an older or newer binary leaves the host to the shell. It is
// agentproto.Version's: decided in code, bumped with any change to the
// typed requests, answers or the launcher's arguments.
const AgentProto = agentproto.Proto

// agentLauncher starts the Go agent: the installed one (installed.sh),
// else the deployed binary (--worker-bin, else synthwatch on PATH, else
// ~/.local/bin/synthwatch, as a launch finds it; "-": none) when it speaks
// AgentProto. Its arguments: the nonce, the binary, the protocol, and the
// first request (base64 of its frame) when it fits on the command line
// (else it follows the hello on stdin). With no agent it ends before a
// hello, having said why ("@A NONCE missing|refused|mismatch …"): that
// poll reads by the fallback (host/fallback.sh), beside the install.
// A binary that hangs on the question (a hung mount, a wrapper that waits)
// is given 10 s where timeout(1) is there.
var agentLauncher = whereScript + looseScript + installedScript + `k=$1 bin=$2 proto=$3
if [ -z "$bin" ]; then bin=$(command -v synthwatch 2>/dev/null) || bin="$HOME/.local/bin/synthwatch"; fi
to=; command -v timeout >/dev/null 2>&1 && to="timeout 10"
if [ "$bin" != - ] && [ -f "$bin" ] && [ -x "$bin" ]; then
  got=$($to "$bin" agent --proto </dev/null 2>/dev/null)
  [ "$got" = "$proto" ] && exec "$bin" agent --serve "$proto" --skip 0 "$k" "$4"
  printf '@A %s mismatch %.64s %s\n' "$k" "$(printf %s "$got" | tr -c 'A-Za-z0-9./_-' '?')" "$(printf %s "$bin" | tr '\n' '?')"
fi
`

// AgentMain is "synthwatch agent ARGS" on the host: --proto prints the
// protocol; --serve PROTO --skip N NONCE [FIRST] serves (ServeAgent) when
// PROTO is AgentProto, first answering FIRST (a request from the command
// line), then skipping N bytes of stdin (0 from today's launcher), and
// exits 0 when stdin ends, 70 on a bad request; another PROTO (a launcher
// that did not ask) is named on stdout and exits 75, reading nothing. It
// returns the exit status.
func AgentMain(args []string, in io.Reader, out io.Writer) int {
	if len(args) == 1 && args[0] == "--proto" {
		fmt.Fprintln(out, AgentProto)
		return 0
	}
	if len(args) < 5 || len(args) > 6 || args[0] != "--serve" || args[2] != "--skip" {
		fmt.Fprintln(os.Stderr, "usage: synthwatch agent --proto | --serve PROTO --skip N NONCE [REQUEST]")
		return 2
	}
	skip, err := strconv.ParseInt(args[3], 10, 64)
	if err != nil || skip < 0 {
		fmt.Fprintln(os.Stderr, "synthwatch agent: --skip wants a byte count")
		return 2
	}
	nonce := args[4]
	if args[1] != AgentProto {
		exe, _ := os.Executable()
		fmt.Fprintf(out, "@A %s mismatch %s %s\n", nonce, AgentProto, strings.ReplaceAll(exe, "\n", "?"))
		return 75
	}
	var first []byte
	if len(args) == 6 {
		if first, err = base64.StdEncoding.DecodeString(args[5]); err != nil {
			fmt.Fprintln(os.Stderr, "synthwatch agent: the first request is not base64")
			return 2
		}
	}
	in = io.MultiReader(bytes.NewReader(first), &skipReader{r: in, n: skip})
	if err := ServeAgent(in, out, nonce); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 70
	}
	return 0
}

// skipReader reads r after discarding its first n bytes.
type skipReader struct {
	r io.Reader
	n int64
}

func (s *skipReader) Read(p []byte) (int, error) {
	if s.n > 0 {
		k, err := io.CopyN(io.Discard, s.r, s.n)
		s.n -= k
		if err != nil {
			return 0, err
		}
	}
	return s.r.Read(p)
}

// ServeAgent is the agent in Go, run on the host as "synthwatch agent":
// agentproto's Requests on in, its Answers on out, after the marker and
// the Hello. Each op's records are what the one-shot batch would print
// for it (parseBatchOf reads them), made here without a process per op:
// files are read in place; only an op that runs a command (exec, procs'
// scan, a countthen's sum) starts one.
func ServeAgent(in io.Reader, out io.Writer, nonce string) error {
	os.Setenv("LC_ALL", "C") // the commands it runs see what the shell's would
	os.Unsetenv("CDPATH")
	s := &hostAgent{nonce: nonce, shapes: map[int]agentproto.Shape{}, last: map[int]string{}, outs: map[int][]byte{}, sums: newTokenSums()}
	exe, _ := os.Executable()
	if _, err := io.WriteString(out, agentproto.Marker(nonce)); err != nil {
		return err
	}
	fw := agentproto.NewWriter(out)
	if err := fw.Send(agentproto.Hello{Proto: agentproto.Proto, Nonce: nonce, Exe: exe, OS: runtime.GOOS, Arch: runtime.GOARCH}); err != nil {
		return err
	}
	// stdin is read apart from the requests: when it ends (the dashboard
	// gave up on a request past its deadline, or the link went), what the
	// request started ends with it, not when it is done
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type reqErr struct {
		req agentproto.Request
		err error
	}
	reqs := make(chan reqErr, 16)
	go func() {
		fr := agentproto.NewReader(in)
		for {
			var r agentproto.Request
			err := fr.Recv(&r)
			if err != nil {
				cancel()
			}
			reqs <- reqErr{r, err} // the loop reads it after the request in hand
			if err != nil {
				return
			}
		}
	}()
	for {
		re := <-reqs
		if re.err == io.EOF {
			return nil // the link ended: so does the agent
		}
		if re.err != nil {
			return re.err
		}
		ans, err := s.request(ctx, re.req)
		if err != nil {
			fw.Send(agentproto.Answer{Err: err.Error()})
			return err
		}
		if ctx.Err() != nil {
			return nil // nobody waits for this answer
		}
		if err := fw.Send(ans); err != nil {
			return err
		}
	}
}

type hostAgent struct {
	nonce   string
	strings []string                 // the session's strings (Request.Strings), Ref-1
	shapes  map[int]agentproto.Shape // the session's op shapes
	last    map[int]string           // an op's file state when it last ran from the file's end ("" none)
	outs    map[int][]byte           // an op's last answer
	sums    *tokenSums               // the token sums, kept (tokensum.go)
}

// agentOp is one op of a request, its arguments filled in.
type agentOp struct {
	key    int
	name   string
	args   []string // after the name
	ap, an string   // its own path and the alias that names it in records
	fast   bool     // answered as last time, unrun
}

// resolve fills in a Call's shape: its strings and its numbers.
func (s *hostAgent) resolve(c agentproto.Call) (*agentOp, error) {
	sh, ok := s.shapes[c.Key]
	if !ok {
		return nil, fmt.Errorf("synthwatch-agent: no op %d", c.Key)
	}
	op := &agentOp{key: c.Key, name: sh.Name}
	nums := c.Nums
	for pos, a := range sh.Args {
		x := a.Lit
		switch {
		case a.Num:
			if len(nums) == 0 {
				return nil, errors.New("synthwatch-agent: bad request: a number missing")
			}
			x, nums = nums[0], nums[1:]
		case a.Ref > 0:
			if a.Ref > len(s.strings) {
				return nil, fmt.Errorf("synthwatch-agent: bad request: string %d not sent", a.Ref)
			}
			x = s.strings[a.Ref-1]
			if pos == 0 {
				op.ap, op.an = x, "\x01"+strconv.Itoa(a.Ref-1)
			}
		}
		op.args = append(op.args, x)
	}
	if len(nums) != 0 {
		return nil, errors.New("synthwatch-agent: bad request: numbers left over")
	}
	return op, nil
}

// request answers one Request: its ops run at once, each answered as its
// last answer (Same) when nothing changed.
func (s *hostAgent) request(ctx context.Context, req agentproto.Request) (agentproto.Answer, error) {
	s.strings = append(s.strings, req.Strings...)
	for _, sh := range req.Shapes {
		s.shapes[sh.Key] = sh
	}
	var ops []*agentOp
	for _, c := range req.Calls {
		op, err := s.resolve(c)
		if err != nil {
			return agentproto.Answer{}, err
		}
		ops = append(ops, op)
	}
	for _, op := range ops {
		st := s.fileState(op)
		prev := s.last[op.key]
		s.last[op.key] = st
		op.fast = st != "" && st == prev
	}
	outs := make([][]byte, len(ops))
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		if op.fast {
			continue
		}
		wg.Add(1)
		go func() { // ops run at once: a slow command holds up only its own
			defer wg.Done()
			var b bytes.Buffer
			r := &recorder{ctx: ctx, w: &b, nonce: s.nonce, ap: op.ap, an: op.an, sums: s.sums}
			errs[i] = r.dispatch(op.name, op.args)
			outs[i] = b.Bytes()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return agentproto.Answer{}, err
	}
	ans := agentproto.Answer{Ops: make([]agentproto.OpAnswer, len(ops))}
	for i, op := range ops {
		prev, had := s.outs[op.key]
		if op.fast || had && bytes.Equal(prev, outs[i]) {
			ans.Ops[i] = agentproto.OpAnswer{Key: op.key, Same: true}
			continue
		}
		ans.Ops[i] = agentproto.OpAnswer{Key: op.key, Data: outs[i]}
		s.outs[op.key] = outs[i]
	}
	return ans, nil
}

// fileState is what lets an op asked from its file's end answer as it did
// then: "SIZE MTIME MODE OFF" when the file's size is the op's offset,
// "noent" when it is gone, "" when the op must run.
func (s *hostAgent) fileState(op *agentOp) string {
	switch op.name {
	case "tail", "count", "countthen":
	default:
		return ""
	}
	if op.an == "" || len(op.args) < 2 || !allDigits(op.args[1]) {
		return ""
	}
	fi, err := os.Stat(op.ap)
	if err != nil {
		return "noent"
	}
	size := strconv.FormatInt(fi.Size(), 10)
	if size != op.args[1] {
		return ""
	}
	return fmt.Sprintf("%s %d %x %s", size, fi.ModTime().Unix(), rawMode(fi), op.args[1])
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// rawMode is stat's %f: the st_mode bits.
func rawMode(fi fs.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Mode
	}
	return uint32(fi.Mode().Perm())
}

// recorder writes one op's records, as fallback.sh's hdr, fin and recf.
type recorder struct {
	ctx    context.Context // the request's: it ends when stdin does
	w      *bytes.Buffer
	nonce  string
	ap, an string
	sums   *tokenSums
}

// run runs argv, or answers it in Go when it is a token sum or the
// records' span (recspan.go).
func (r *recorder) run(argv []string) (int, []byte, []byte) {
	if out, ok := answerRecordSpans(argv); ok {
		return 0, out, nil
	}
	if r.sums != nil {
		if out, errb, ok := r.sums.answerSums(argv); ok {
			return 0, out, errb
		}
	}
	return run(r.ctx, argv)
}

func (r *recorder) hdr(kind, status string, a, b, c int64, p string, dlen int) {
	if r.ap != "" && p == r.ap {
		p = r.an
	}
	fmt.Fprintf(r.w, "@%s %s %d %d %d %d %d\n%s", kind, status, a, b, c, len(p), dlen, p)
}

func (r *recorder) fin() { r.w.WriteString(r.nonce + "\n") }

func (r *recorder) rec(kind, status string, a, b, c int64, p string, data []byte) {
	r.hdr(kind, status, a, b, c, p, len(data))
	r.w.Write(data)
	r.fin()
}

// gone is the status of a path an op failed on: noent unless it exists.
func gone(p string) string {
	if _, err := os.Stat(p); err == nil {
		return "err"
	}
	return "noent"
}

func errText(err error) []byte { return []byte(err.Error() + "\n") }

func atoi(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

// opArgs is how many arguments each op takes before its command, and
// which of them counts the command's words (-1: it runs none).
var opArgs = map[string]struct{ fixed, argvLen int }{
	"cat": {2, -1}, "glob": {3, -1}, "tail": {3, -1}, "taild": {5, -1}, "count": {4, -1}, "countthen": {7, 6},
	"realpath": {1, -1}, "exec": {2, 1}, "procs": {3, 2},
}

func (r *recorder) dispatch(name string, a []string) error {
	if name == "each" {
		return r.each(a)
	}
	spec, ok := opArgs[name]
	if !ok {
		return fmt.Errorf("synthwatch-batch: unknown op %s", name)
	}
	n := spec.fixed
	if spec.argvLen >= 0 && len(a) > spec.argvLen {
		n += max(int(atoi(a[spec.argvLen])), 0)
	}
	if len(a) < n {
		return fmt.Errorf("synthwatch-agent: op %s: %d arguments, want %d", name, len(a), n)
	}
	argv := a[spec.fixed:n]
	switch name {
	case "cat":
		r.cat(a[0], atoi(a[1]))
	case "glob":
		r.glob(a[0], a[1], a[2])
	case "tail":
		if size, ok := r.stat1(a[0]); ok {
			r.tailAt(a[0], size, a[1], atoi(a[2]))
		}
	case "taild":
		if size, ok := r.stat1(a[0]); ok {
			r.digest(a[0], size, atoi(a[1]), atoi(a[3]), a[4])
			r.tailAt(a[0], size, a[1], atoi(a[2]))
		}
	case "count", "countthen":
		var th *thenArgs
		if name == "countthen" {
			th = &thenArgs{from: atoi(a[4]), index: a[5], argv: argv}
		}
		if size, ok := r.stat1(a[0]); ok {
			r.count(a[0], size, atoi(a[1]), atoi(a[2]), atoi(a[3]), th)
		}
	case "realpath":
		r.realPath(a[0])
	case "exec":
		r.exec(a[0], argv)
	case "procs":
		r.procs(a[0], a[1], argv)
	}
	return nil
}

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
			r.rec("S", "noent", 0, 0, 0, p, errText(err))
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
		r.rec("R", gone(p), 0, 0, 0, p, errText(err))
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
	stdout, _ := r.exec(index, scan)
	seen := map[string]bool{}
	var pids []string
	for _, line := range strings.Split(strings.TrimSuffix(string(stdout), "\n"), "\n") {
		p, _, _ := strings.Cut(line, " ")
		p = strings.Trim(p, " \t")
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
