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
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

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
// else the deployed binary (deployed.sh: --worker-bin, else synthwatch on PATH, else
// ~/.local/bin/synthwatch, as a launch finds it; "-": none) when it speaks
// AgentProto. Its arguments: the nonce, the binary, the protocol, and the
// first request (base64 of its frame) when it fits on the command line
// (else it follows the hello on stdin), "no-install" for --no-install
// (else ""), and the platform its agent named before (Agent.SetPlatform,
// where.sh), if any. With no agent it ends before a hello, having said why ("@A NONCE missing|refused|mismatch …"): that
// poll reads by the fallback (host/fallback.sh), beside the install.
var agentLauncher = noInstallLine + whereScript + looseScript + installedScript + HostScript("deployed.sh")

// noInstallLine: a fifth argument "no-install" (--no-install) starts the
// agent with SYNTHWATCH_NO_INSTALL, as report's digest is (digest.sh).
const noInstallLine = `[ "$5" != no-install ] || { SYNTHWATCH_NO_INSTALL=1; export SYNTHWATCH_NO_INSTALL; }` + "\n"

// AgentMain is "synthwatch agent ARGS" on the host: --proto prints the
// protocol; --serve PROTO --skip N NONCE [FIRST] serves (ServeAgent) when
// PROTO is AgentProto, first answering FIRST (a request from the command
// line), then skipping N bytes of stdin (0 from today's launcher), and
// exits 0 when stdin ends, 70 on a bad request; another PROTO (a launcher
// that did not ask) is named on stdout and exits 75, reading nothing. It
// returns the exit status. keep (nil: none) keeps a report's stamps of
// the records it sums (stampkeep.go).
func AgentMain(args []string, in io.Reader, out io.Writer, keep StampKeeper) int {
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
	if err := ServeAgent(in, out, nonce, keep); err != nil {
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
// scan, a countthen's sum) starts one. keep, when not nil, keeps a
// report's stamps of the records summed, a while after the first answer.
func ServeAgent(in io.Reader, out io.Writer, nonce string, keep StampKeeper) error {
	os.Setenv("LC_ALL", "C") // the commands it runs see what the shell's would
	os.Unsetenv("CDPATH")
	s := &hostAgent{nonce: nonce, shapes: map[int]agentproto.Shape{}, last: map[int]string{}, outs: map[int][]byte{}, sums: newTokenSums(), stamps: newStamper(keep)}
	defer s.sums.flush() // what the last saveEvery kept
	exe, _ := os.Executable()
	if _, err := io.WriteString(out, agentproto.Marker(nonce)); err != nil {
		return err
	}
	fw := agentproto.NewWriter(out)
	if err := fw.Send(agentproto.Hello{Proto: agentproto.Proto, Nonce: nonce, Exe: exe, OS: runtime.GOOS, Arch: runtime.GOARCH, Progs: progsDigest()}); err != nil {
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
		s.stamps.after(s.sums)
	}
}

type hostAgent struct {
	nonce   string
	strings []string                 // the session's strings (Request.Strings), Ref-1
	shapes  map[int]agentproto.Shape // the session's op shapes
	last    map[int]string           // an op's file state when it last ran from the file's end ("" none)
	outs    map[int][]byte           // an op's last answer
	sums    *tokenSums               // the token sums, kept (tokensum.go)
	stamps  *stamper                 // a report's stamps of the records summed, kept (stampkeep.go)
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
		case a.Prog != "":
			if x, ok = progs()[a.Prog]; !ok {
				return nil, fmt.Errorf("synthwatch-agent: bad request: no program %q here", a.Prog)
			}
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
	if req.Progs != "" && req.Progs != progsDigest() {
		return agentproto.Answer{}, fmt.Errorf("synthwatch-agent: the request names programs of another build (%.16s, this one's %s)", req.Progs, progsDigest())
	}
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
		if gone(op.ap) == "noent" {
			return "noent"
		}
		return "" // its error, read again
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

// run runs argv, or answers it in Go when it is a token sum, the
// records' span (recspan.go) or another program Go reads as it would
// (hostagent_native.go).
func (r *recorder) run(argv []string) (int, []byte, []byte) {
	if out, ok := answerRecordSpans(argv); ok {
		return 0, out, nil
	}
	if code, out, errb, ok := answerNative(r.ctx, argv); ok {
		return code, out, errb
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

// gone is the status of a path an op failed on: noent unless it exists,
// as fallback.sh's gone: a link to nothing (a scratch disk not mounted)
// exists, and fails as an error, not as a file that is gone.
func gone(p string) string {
	if _, err := os.Lstat(p); err == nil {
		return "err"
	}
	return "noent"
}

func errText(err error) []byte { return []byte(err.Error() + "\n") }

// failText is the text of an op's failure on p: a link to nothing (a
// scratch disk not mounted) names its target, in fallback.sh's words
// (gone), else err's text.
func failText(p string, err error) []byte {
	if errors.Is(err, fs.ErrNotExist) {
		if t, lerr := os.Readlink(p); lerr == nil {
			return []byte(danglingText(strings.TrimRight(t, "\n")) + "\n") // as the script's $(readlink)
		}
	}
	return errText(err)
}

// danglingText is what a reader says of a link to target that is not there.
func danglingText(target string) string { return "a link to " + target + ", which is not there" }

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
