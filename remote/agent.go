package remote

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synthwatch/synthwatch/remote/agentproto"
)

// A Stream is a command on the host that keeps running: what is written
// goes to its stdin, what is read comes from its stdout.
type Stream interface {
	io.Writer
	io.Reader
	Close() error
}

// A Streamer starts Streams (an SSH channel, a local process).
type Streamer interface {
	Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error)
}

// ErrNoAgent: no Go agent runs on the host this session (none installed,
// another protocol, or it would not start); the poll reads by the
// fallback (host/fallback.sh) instead, while the install, if any, goes on.
var ErrNoAgent = errors.New("no agent on the host")

// Agent answers Batches through the Go agent ("synthwatch agent"), which
// stays on the host for the life of the link session, so a steady poll
// sends no path again. Each string that is not a plain word is sent once
// and named by a number after that. The agent keeps each op's last answer,
// and an answer that did not change comes back as a few bytes that name
// it: what an idle file costs is a frame, not its stat. It reads stdin: it
// ends when the channel does, and it never outlives the link.
type Agent struct {
	h Streamer
	l Linked // the session the agent runs on; nil: one session for ever

	mu      sync.Mutex
	st      Stream
	rd      *bufio.Reader
	errb    *lastBytes
	sess    int
	nonce   string
	alias   map[string]int
	names   []string // the aliases, by number
	keys    map[string]int
	outs    map[int][]byte
	lastOps int    // the last request's ops: a follow-up of a few (a sum after the poll) is bounded by its poll's
	useBin  bool   // the deployed binary may be the agent (UseBinary)
	bin     string // its path: "" finds it as a launch does
	noAgent error  // why this session's host cannot run it
	noSess  int
	kind    string // which agent said hello last, or why none did (Kind)
	hello   agentproto.Hello
	// the Go agent's frames: gw writes the session's frames, fw is gw once
	// the Go agent said hello, fr reads its
	gw, fw    *agentproto.Writer
	fr        *agentproto.Reader
	pendFrame []byte // a first request not on the command line

	// the installed agent (install.go): what the launcher said of it this
	// session, and the copy
	autoInstall bool
	place       *AgentPlace // "missing": where it goes
	refused     string      // "refused": MODE UID PATH
	inst        *installing
	stopInstall func()
	swap        bool // installed: the next request starts the Go agent
	// platform: "OS-ARCH" as the host's agent named it in its last hello
	// (SetPlatform: a run before this one's), which spares the launcher
	// its uname while that agent is there; tried: the launch that failed
	// was told it
	platform string
	tried    bool
	// progs: the host's agent carries this build's programs (its hello's
	// Progs, or SetProgs's word before the hello), so a request names
	// them; seenProgs: that digest as its last hello said it
	progs     bool
	seenProgs string
	cshSent   bool // the launch went as to a csh login (no newline on its line)
	lastReq   int  // bytes of the last request (tests)
	lastAns   int  // bytes of the last answer (tests)

	starts, requests atomic.Int64
}

// NewAgent runs batches on h when it is a Streamer; nil otherwise.
func NewAgent(h Host) *Agent {
	s, ok := h.(Streamer)
	if !ok {
		return nil
	}
	l, _ := h.(Linked)
	return &Agent{h: s, l: l}
}

// UseBinary lets the agent be the deployed synthwatch (bin: --worker-bin;
// "" finds it as a launch does) where it speaks AgentProto and none is
// installed. Without it only the installed agent answers.
func (a *Agent) UseBinary(bin string) {
	a.mu.Lock()
	a.useBin, a.bin = true, bin
	a.mu.Unlock()
}

// SetPlatform tells the launcher the host's platform ("linux-amd64") as
// its agent named it before (Platform, kept by the caller between runs):
// the launcher runs that agent without a uname while it is there. A
// platform not of that form is ignored.
func (a *Agent) SetPlatform(p string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.platform = ""
	if goos, arch, ok := strings.Cut(p, "-"); ok && isPlatformWord(goos) && isPlatformWord(arch) {
		a.platform = p
	}
}

// SetProgs tells the agent the digest of the programs the host's agent
// carried in its last hello (Progs, kept by the caller between runs): when
// it is this build's, the first request names them rather than send them.
func (a *Agent) SetProgs(d string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seenProgs, a.progs = d, d != "" && d == progsDigest()
}

// Progs is the digest of the programs the host's agent carries, as its
// last hello said it ("": none said hello).
func (a *Agent) Progs() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seenProgs
}

// Platform is the host's platform as its agent's last hello named it ("":
// none said hello, or the one told to the launcher did not start).
func (a *Agent) Platform() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.platform
}

// isPlatformWord: a GOOS or GOARCH as where.sh takes one ([a-z0-9]+).
func isPlatformWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < 'a' || s[i] > 'z') && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return s != ""
}

// Stats counts the agent's starts and requests.
func (a *Agent) Stats() (starts, requests int64) { return a.starts.Load(), a.requests.Load() }

func (a *Agent) session() int {
	if a.l == nil {
		return 0
	}
	return a.l.State().Sessions
}

// Usable says whether a Run may work: not known to fail on this session.
func (a *Agent) Usable() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.noAgent == nil || a.noSess != a.session()
}

// helloLimit bounds a fresh agent's start to its hello: the launcher's
// question to the binary (10 s at most where timeout(1) is) and a shell's
// start on a loaded host.
const helloLimit = 20 * time.Second

// maxAliases bounds the strings an agent remembers beyond what one
// request names (a few per op: 10,000 categories name some 30,000 paths
// each poll, and must not start a new agent each poll): past it, a new
// agent, so strings that went (pids, old runs) do not pile up for days.
const maxAliases = 4096

// aliasBound is maxAliases for a request of ops ops.
func aliasBound(ops int) int { return maxAliases + 8*ops }

// Run answers b: what the one-shot batch would have printed, parsed.
func (a *Agent) Run(ctx context.Context, b *Batch) (*answers, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ans, err := a.run(ctx, b)
	if errors.Is(err, errCshLine) {
		ans, err = a.run(ctx, b) // once: the host now knows its login shell
	}
	return ans, err
}

// errCshLine: a csh login cut the launcher's line at a newline, before
// anything ran (CshSaid); noted on the host, the launch goes again.
var errCshLine = errors.New("the login shell is csh's: a command line with a newline never ran")

// run is Run, a.mu held.
func (a *Agent) run(ctx context.Context, b *Batch) (*answers, error) {
	ctx, cancel := withDeadline(ctx) // a black-holed link must not hold the poll past an op's time
	defer cancel()
	if len(b.ops) == 0 {
		return parseBatchOf(nil, b, nil)
	}
	sess := a.session()
	if a.noAgent != nil && a.noSess == sess {
		return nil, a.noAgent
	}
	ops := len(b.ops)
	if a.st != nil && (a.sess != sess || len(a.alias) > aliasBound(max(ops, a.lastOps)) || a.swap) {
		a.stop()
	}
	a.lastOps = ops
	a.swap = false
	fresh := a.st == nil
	var req []byte
	if fresh {
		if err := a.start(ctx, sess, b); err != nil {
			return nil, err
		}
	} else {
		b.nonce = a.nonce
		req = a.encode(b)
	}
	if !fresh {
		a.lastReq = len(req)
	}
	a.requests.Add(1)
	st := a.st
	// a request past its time ends the agent: its answer would come out of turn
	closeLate := context.AfterFunc(ctx, func() { abort(st) })
	// a fresh agent says hello within helloLimit, whatever the poll's own
	// time (a first read may have minutes): a binary that hangs after it
	// answered --proto, or on a host without timeout(1), is given up
	// for this session, not waited on poll after poll
	helloCtx, cancelHello := context.WithTimeout(ctx, helloLimit)
	defer cancelHello()
	helloLate := func() bool { return true }
	if fresh {
		helloLate = context.AfterFunc(helloCtx, func() { abort(st) })
	}
	out, err := a.exchange(req, fresh, helloLate)
	if !closeLate() && err == nil {
		a.stop() // closed just as the answer came: the answer stands, the next request starts anew
	}
	if err != nil {
		a.stop() // first: stopping lets what it said as it ended reach errb
		why := strings.TrimSpace(a.errb.String())
		if ctx.Err() != nil {
			return nil, fmt.Errorf("agent: %w", ctx.Err())
		}
		if fresh && helloCtx.Err() != nil {
			a.noAgent, a.noSess = fmt.Errorf("%w: it said nothing for %s after it started", ErrNoAgent, helloLimit), sess
			return nil, a.noAgent
		}
		if c, ok := a.h.(CshLearner); ok && fresh && errors.Is(err, io.EOF) && !a.cshSent && a.noneWhy() == "" && CshSaid([]byte(why)) {
			// (the launcher never ran: no hello, no "@A" record; the host
			// as it was when this launch was sent, not as a command beside
			// it has just taught it)
			c.NoteLoginCsh() // the next launch goes with no newline on its line
			return nil, errCshLine
		}
		if fresh && errors.Is(err, io.EOF) && a.tried && a.noneWhy() == "" {
			// the agent the platform named did not start (a home shared
			// with a host of another arch, under the same name): this poll
			// reads by the fallback, the next launch asks uname
			a.platform = ""
			return nil, fmt.Errorf("%w: %s", ErrNoAgent, firstNonEmpty(why, "the launcher ended"))
		}
		if fresh && errors.Is(err, io.EOF) {
			// the launcher found no agent to run (it said why): the fallback
			// reads this session, beside the install
			a.noAgent, a.noSess = fmt.Errorf("%w: %s", ErrNoAgent, firstNonEmpty(a.noneWhy(), why, "the launcher ended")), sess
			a.maybeInstall()
			return nil, a.noAgent
		}
		if why != "" {
			err = fmt.Errorf("%w (%s)", err, why)
		}
		return nil, fmt.Errorf("agent: %w", err)
	}
	if fresh {
		a.maybeInstall()
	}
	return parseBatchOf(out, b, a.names)
}

// CshLearner is a host whose login shell may be csh's (SSH): it learns
// so from a command csh refused, or is told by a run before (the hint).
type CshLearner interface {
	LoginCsh() bool
	NoteLoginCsh()
}

// requestOnTheLine says whether the first request (the launcher's $4, argv[7])
// travels on the command line: argv whole (OnTheLine); under a csh login,
// whose launcher always goes on stdin (a newline never goes on the line),
// the request's word where wireCommand leaves it there.
func requestOnTheLine(argv []string, max int, csh bool) bool {
	if !csh {
		return OnTheLine(argv, max)
	}
	line, _ := wireCommand(argv, max, true, true)
	return strings.Contains(line, " "+Quote(argv[7])+" ")
}

// loginCsh says whether h's login shell is known to be csh's.
func loginCsh(h any) bool {
	c, ok := h.(CshLearner)
	return ok && c.LoginCsh()
}

// cut keeps the first n bytes of s.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Kind says which agent answered last on this link: "go PATH" (PATH as
// the host names it), "fallback" or "fallback (why no agent: a binary of
// another protocol, the install's progress)" when none runs, or "" (none
// has started). Remote text: sanitise it before a terminal.
func (a *Agent) Kind() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fw == nil && a.kind != "" {
		if why := a.installKind(); why != "" {
			if k, ok := strings.CutSuffix(a.kind, ")"); ok {
				return k + "; " + why + ")"
			}
			return a.kind + " (" + why + ")"
		}
	}
	return a.kind
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// startArgv is the launcher's command (agentLauncher) and its arguments:
// the first request (base64 of its frame) rides on the command line when
// the line fits (the server's LineLimit), so its answer does not wait for the
// channel's window (OpenSSH opens a session's window only once the exec
// is in: a round trip); else it follows the hello on stdin.
func (a *Agent) startArgv(nonce string, frame []byte) []string {
	bin := "-"
	if a.useBin {
		bin = a.bin
	}
	inst := ""
	if !a.autoInstall { // --no-install: the host must not be written, so the agent keeps no report's stamps there
		inst = "no-install"
	}
	argv := []string{"sh", "-c", agentLauncher, "synthwatch-agent", nonce, bin, AgentProto, base64.StdEncoding.EncodeToString(frame), inst}
	if a.platform != "" {
		argv = append(argv, a.platform)
	}
	return argv
}

func (a *Agent) start(ctx context.Context, sess int, b *Batch) error {
	var r [6]byte // 48 random bits a session: a record's end, which no file can know
	crand.Read(r[:])
	nonce := "~" + hex.EncodeToString(r[:])
	a.errb = &lastBytes{max: 2048}
	a.alias, a.keys, a.outs, a.names = map[string]int{}, map[string]int{}, map[int][]byte{}, nil
	a.gw, a.fw, a.fr = agentproto.NewWriter(nil), nil, nil
	a.place, a.refused = nil, ""
	b.nonce = nonce
	frame, err := a.gw.Frame(a.plan(b))
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	argv := a.startArgv(nonce, frame)
	a.pendFrame = nil
	a.cshSent = loginCsh(a.h)
	if !requestOnTheLine(argv, lineLimit(a.h), a.cshSent) {
		argv = a.startArgv(nonce, nil) // it follows the hello on stdin
		a.pendFrame = frame
	}
	a.lastReq = len(frame)
	a.tried = a.platform != ""
	st, err := a.h.Stream(ctx, a.errb, argv...)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	a.starts.Add(1)
	a.st, a.rd, a.sess, a.nonce = st, bufio.NewReaderSize(st, 64<<10), sess, nonce
	return nil
}

func (a *Agent) stop() {
	if a.st != nil {
		a.st.Close()
	}
	a.st, a.rd = nil, nil
}

// abort ends st at once: a request past its time, whose answer would come
// out of turn. A local process is killed, not given Close's grace.
func abort(st Stream) {
	if k, ok := st.(interface{ Kill() }); ok {
		k.Kill()
		return
	}
	st.Close()
}

// Close ends the agent (the host's shell sees its stdin end).
func (a *Agent) Close() {
	a.mu.Lock()
	a.stop()
	if a.stopInstall != nil {
		a.stopInstall()
	}
	a.mu.Unlock()
}

// lastBytes keeps the last max bytes written (a stream's stderr).
type lastBytes struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (l *lastBytes) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	if len(l.b) > l.max {
		l.b = append(l.b[:0], l.b[len(l.b)-l.max:]...)
	}
	return len(p), nil
}

func (l *lastBytes) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// LastSizes: the bytes of the last request and of its answer.
func (a *Agent) LastSizes() (req, ans int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastReq, a.lastAns
}
