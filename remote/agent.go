package remote

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// ErrNoAgent: the host cannot run the agent (no stat -c, no sh); the poll
// reads the files one by one instead.
var ErrNoAgent = errors.New("the host cannot run the agent")

// Agent answers Batches through one shell that stays on the host for the
// life of the link session, so a steady poll sends neither the script nor
// its paths again. Each string that is not a plain word is sent once and
// named by a number after that. The agent keeps each op's last answer, and
// an answer that did not change comes back as a few bytes that name it:
// what an idle file costs is a line, not its stat. The agent is a shell
// reading stdin: it ends when the channel does, and it never outlives the
// link.
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
	useBin  bool   // the deployed binary may be the agent (UseBinary)
	bin     string // its path: "" finds it as a launch does
	noAgent error  // why this session's host cannot run it
	noSess  int
	kind    string // which agent said hello last (Kind)
	hello   agentproto.Hello
	feed    chan struct{} // closed when the shell agent's script is on stdin
	// the Go agent's frames: gw writes the session's frames, fw is gw once
	// the Go agent said hello (nil: the shell agent reads), fr reads its
	gw, fw              *agentproto.Writer
	fr                  *agentproto.Reader
	pendText, pendFrame []byte // a first request not on the command line

	// the installed agent (install.go): what the launcher said of it this
	// session, and the copy
	autoInstall bool
	place       *AgentPlace // "missing": where it goes
	refused     string      // "refused": MODE UID PATH
	inst        *installing
	stopInstall func()
	swap        bool // installed: the next request starts the Go agent
	lastReq     int  // bytes of the last request (tests)
	lastAns     int  // bytes of the last answer (tests)

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
// "" finds it as a launch does) where it speaks AgentProto: a steady poll
// then forks nothing on the host. Elsewhere the agent is the shell.
func (a *Agent) UseBinary(bin string) {
	a.mu.Lock()
	a.useBin, a.bin = true, bin
	a.mu.Unlock()
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
	ctx, cancel := withDeadline(ctx) // a black-holed link must not hold the poll past an op's time
	defer cancel()
	if len(b.ops) == 0 {
		return parseBatchOf(nil, b, nil)
	}
	sess := a.session()
	if a.noAgent != nil && a.noSess == sess {
		return nil, a.noAgent
	}
	if a.st != nil && (a.sess != sess || len(a.alias) > aliasBound(len(b.ops)) || a.swap) {
		a.stop()
	}
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
		if fresh && errors.Is(err, io.EOF) {
			// it ended before its first answer: this host cannot run it
			a.noAgent, a.noSess = fmt.Errorf("%w: %s", ErrNoAgent, firstNonEmpty(why, "it exited at once")), sess
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

// cut keeps the first n bytes of s.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Kind says which agent answered last on this link: "go PATH" (the
// deployed binary, PATH as the host names it), "shell", "shell (why not
// the binary there)", or "" (none has started). Remote text: sanitise it
// before a terminal.
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

// start starts an agent for the session with b as its first request: on
// the command line when the line fits (remote.MaxLine), so its answer
// does not wait for the channel's window (OpenSSH opens a session's window
// only once the exec is in: a round trip), in both spellings (the Go
// agent's frame and the shell agent's text: the launcher picks the agent);
// else on stdin, behind the shell agent's script, once the hello said
// which agent runs.
// startArgv is the agent's command: the launcher (or, with no binary to
// try, the shell's start) and its arguments, the first request included.
func (a *Agent) startArgv(nonce string, text, frame []byte) []string {
	script := agentShell
	if a.useBin {
		script = agentLauncher
	}
	return []string{"sh", "-c", script, "synthwatch-agent", nonce, a.bin, AgentProto, strconv.Itoa(len(agentScript)), string(text), agentScriptHash, base64.StdEncoding.EncodeToString(frame)}
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
	req := a.plan(b)
	text := shellText(req, 0)
	frame, err := a.gw.Frame(req)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	argv := a.startArgv(nonce, text, frame)
	a.pendText, a.pendFrame = nil, nil
	if !OnTheLine(argv) {
		argv = a.startArgv(nonce, nil, nil) // it follows the hello on stdin
		a.pendText, a.pendFrame = text, frame
	}
	a.lastReq = len(frame)
	st, err := a.h.Stream(ctx, a.errb, argv...)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	a.starts.Add(1)
	a.st, a.rd, a.sess, a.nonce = st, bufio.NewReaderSize(st, 64<<10), sess, nonce
	// stdin waits for the channel's window: written beside the first answer
	feed := make(chan struct{})
	a.feed = feed
	go func() {
		defer close(feed)
		io.WriteString(st, agentScript)
	}()
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

// agentScriptHash names the shell agent's script in the host's cache.
var agentScriptHash = func() string {
	h := sha256.Sum256([]byte(agentScript))
	return hex.EncodeToString(h[:8])
}()

// agentScript is batchFuncs reading requests on stdin (see encode and
// exchange). The shell keeps no variable per op and reads no request a
// byte at a time: dash and busybox sh keep their variables in 39 hash
// buckets, so a variable per op made a poll of N ops cost N² (1,000
// categories: 37 s a steady poll), and their read builtin takes a
// syscall a byte (a steady request of 10,000 categories is 800 KB). Each
// request comes after an "L LEN" line and is taken whole by head -c; one
// awk (planAwk) reads it and the files that hold what is per op ($t/dt
// the strings, $t/tp the op shapes, $t/ls each op's file state). The ops
// asked from their file's end are stated at once (one pass of sh for
// existence, one stat): an op whose file did not change answers "@=", one
// whose file is at the op's offset or gone answers its S record without
// running (which is all the op would print), and only the rest run, as
// the one-shot batch runs them; their answers are compared with the op's
// last ones (kept in its temp dir), and only changed ones are sent.
// Strings are decoded once, all of a request's new ones by one printf.
var agentScript = batchFuncs + `
soh=$(printf '\001')
: >"$t/dt"; : >"$t/tp"; : >"$t/ls"
planawk='` + planAwk + `'
# runop KEY OP ARG...: one op; its spawns are (of+1)..ol, their records
# in $T/$so when the plan named it (os), else in r.(of+1)..r.ol
runop() { ky=$1; shift; n0=$n; dispatch "$@"; eval "ok$nops=\$ky of$nops=\$n0 ol$nops=\$n os$nops=\$so"; so=; nops=$((nops + 1)); }
plan() { awk -v ph="$1" -v k="$k" -v fdt="$t/dt" -v ftp="$t/tp" -v fls="$t/ls" -v fin="$T/in" -v fce="$T/ce" -v fsq="$T/sq" -v fse="$T/se" -v fo="$T" "$planawk" "$t/dt" "$t/tp" "$t/ls" "$T/in" "$T/ce" "$T/sq" "$T/se"; }
# req: the request in $T/in; planAwk says which ops run (plan's "R" lines)
req() {
  : >"$T/ce"; : >"$T/sq"; : >"$T/se"; pd=
  plan 1 >"$T/plan" || { echo "synthwatch-agent: bad request" >&2; exit 70; }
  # p1.sh sets sn, its new strings as A$N='TEXT' lines, and sc and sl, the
  # candidates joined by NUL (for stat) and by newline (for awk), all
  # escaped for printf %b: read without a process; and pd when there was
  # no candidate, and the plan is made (a first request's: one awk, no stat)
  . "$T/p1.sh"
  if [ -n "$sn" ]; then printf '%b' "$sn" >"$T/dn.sh"; . "$T/dn.sh"; fi
  if [ -z "$pd" ] && [ -n "$sc" ]; then
    # a name stat does not answer is gone when stat said so of each (se), else its op runs
    printf '%b' "$sc" >"$T/cx"; printf '%b' "$sl" >"$T/ce"
    # a few names (a newline ends none) stat takes itself, a program less;
    # more go through xargs, which keeps each command line short
    set --; f_=
    while [ $# -le 64 ] && IFS= read -r f_ || [ -n "$f_" ]; do set -- "$@" "$f_"; f_=; done <"$T/ce"
    if [ $# -le 64 ]; then stat -L -c '%s %Y %f %n' -- "$@" >"$T/sq" 2>"$T/se"
    else xargs -0 stat -L -c '%s %Y %f %n' -- <"$T/cx" >"$T/sq" 2>"$T/se"; fi
  fi
  sn= sc= sl=
  [ -n "$pd" ] || plan 2 >"$T/plan" || { echo "synthwatch-agent: bad request" >&2; exit 70; }
  while IFS= read -r pl; do
    case $pl in 'R '*) r_=${pl#R * * }; eval "${r_#* }";; esac
  done <"$T/plan"
}
# answer: every op's records in one file (o.KEY, or j.I for a key asked
# again in one request), their sizes from one stat, the answer's parts
# (a list of names in a file: a string grown a name at a time costs N² in
# sh) joined by one cat into one file sent in one write (one packet on the
# link, not one per op), and the answers kept for the next request's cmp
# by one mv: the processes of a request do not grow with its ops (cmp
# aside, for an op that ran again). A key asked again is compared with
# its answer before in this request, as the dashboard keeps it.
answer() {
  i=0; printf 'set --' >"$T/fl"
  while IFS= read -r pl; do
    case $pl in 'R '*)
      du=${pl#R * }; du=${du%% *}
      eval "ky=\$ok$i a=\$of$i z=\$ol$i s_=\$os$i"; i=$((i + 1))
      f=o.$ky; [ "$du" = 0 ] || f=j.$i
      if [ "$s_" != "$f" ]; then
        set --; j=$a
        while [ "$j" -lt "$z" ]; do j=$((j + 1)); set -- "$@" "$T/r.$j"; done
        if [ $# = 0 ]; then : >"$T/$f"; else cat "$@" >"$T/$f"; fi
      fi
      printf ' %s' "$f";;
    esac
  done <"$T/plan" >>"$T/fl"
  : >"$T/sz"
  # the lists of names (words of ours) are "set --" lines sourced, not read by
  # a process (and no xargs: a host's may fail)
  set --; . "$T/fl"
  [ $# = 0 ] || (cd "$T" && exec stat -L -c '%s %n' -- "$@" >sz 2>/dev/null)
  # a size stat did not give (its line missing) is counted by wc
  exec 4<"$T/sz"; i=0 h=0 rn= tot=0; : >"$T/h.0"; : >"$T/dl"; printf 'set --' >"$T/cl"
  while IFS= read -r pl; do
    case $pl in
    'B '*) printf ' h.%s b.%s' "$h" "${pl#B }"; h=$((h + 1)); : >"$T/h.$h";;
    'R '*)
      fl=${pl#R }; fl=${fl%% *}; du=${pl#R * }; du=${du%% *}
      eval "ky=\$ok$i"; i=$((i + 1))
      f=o.$ky c=$t/o.$ky
      [ "$du" = 0 ] || { f=j.$i; eval "c=\$T/\$cf$ky"; echo "$f $ky" >>"$T/dl"; }
      eval "cf$ky=\$f"
      [ -n "$rn" ] || { IFS=' ' read -r rs rn <&4 || rn=/; }
      s_=; [ "$rn" = "$f" ] && { s_=$rs rn=; case $s_ in *[!0-9]*) s_=;; esac; }
      if [ "$fl" = 0 ] && [ -f "$c" ] && cmp -s "$T/$f" "$c"; then printf '@= %s\n' "$ky" >>"$T/h.$h"
      else
        [ -n "$s_" ] || s_=$(($(wc -c <"$T/$f")))
        printf '@O %s %s\n' "$ky" "$s_" >>"$T/h.$h"; tot=$((tot + s_)); printf ' h.%s %s' "$h" "$f"; h=$((h + 1)); : >"$T/h.$h"
      fi;;
    esac
  done <"$T/plan" >>"$T/cl"
  exec 4<&-
  printf '@E %s\n' "$k" >>"$T/h.$h"; echo " h.$h" >>"$T/cl"
  . "$T/cl"
  # a big answer is written by cat itself (a program and a copy less: its
  # parts are big writes anyway); a small one is joined first and sent in one write
  if [ "$tot" -gt 65536 ]; then (cd "$T" && exec cat "$@")
  else (cd "$T" && exec cat "$@" >ans) && cat "$T/ans"; fi
}
# keep: this request's answers, for the next one's cmp
keep() {
  [ "$i" = 0 ] || (cd "$T" && exec mv -f o.* .. 2>/dev/null)
  [ ! -s "$T/dl" ] || while read -r jf jk; do mv -f "$T/$jf" "$t/o.$jk"; done <"$T/dl"
}
printf '@H %s\n' "$k" # what a login shell printed before this is cut here
# firstreq REQUEST: the first request, when it came on the command line
# ("L LEN", a newline, and its LEN bytes): answered before stdin is read
firstreq() {
  q=1; T=$t/q1 n=0 nops=0
  [ -d "$T" ] || mkdir "$T" || exit 71 # made with $t where the nonce named it
  printf %s "${1#*
}" >"$T/in"
  req
  wait
  answer
  keep
  rm -rf "$T"
}
q=0
[ -z "$1" ] || firstreq "$1"
# run from the user's cache: the script that came on stdin behind the first request is
# skipped, a byte a read: busybox's head -c reads a buffer, and the next
# request may be behind the script already (it was lost, and the agent hung);
# a host without dd skips it by head -c, as before (else the agent ended)
sk="dd bs=1 count=$2 of=/dev/null"; command -v dd >/dev/null 2>&1 || sk="head -c $2"
[ "${2:-0}" = 0 ] || $sk >/dev/null 2>&1 || exit 0
while IFS= read -r line; do
  case $line in
  'L '*)
    ln=${line#L }
    case $ln in ''|*[!0-9]*) echo "synthwatch-agent: bad request" >&2; exit 70;; esac
    q=$((q + 1)); T=$t/q$q n=0 nops=0
    [ -d "$T" ] || mkdir "$T" || exit 71 # q1 may be made already
    # busybox's head -c may read past LEN; nothing is lost, as the client sends a request only after the last one's answer
    head -c "$ln" >"$T/in"
    [ "$(($(wc -c <"$T/in")))" = "$ln" ] || exit 0 # stdin ended mid-request: the link went
    req
    wait
    answer
    keep
    rm -rf "$T";;
  *) echo "synthwatch-agent: bad request" >&2; exit 70;;
  esac
done`

// planAwk plans one request of the shell agent (agentScript's plan).
// Its files: dt "N TEXT" (string N, escaped for printf %b), tp "T KEY OP
// TOK…" (an op's shape), ls "KEY FLAG STATE" (the op's file state when it
// last answered, FLAG 1 when that answer was made here and the op's kept
// answer is older), in the request (its D and T lines, then its R line),
// ce the candidates' names (a line each), sq their stat and se stat's
// errors. A name without a line in sq is gone when stat said "No such file"
// once for each of them: its op's answer is the S record "noent" (a link to
// nothing too: the one-shot's record says so with stat's message in place
// of this one, which no reader reads); otherwise its op runs. ph 1 adds the
// request's strings to dt and its shapes to tp, and writes p1.sh, which
// sets sn (the new strings as A$N='TEXT' lines), sc and sl (the
// candidates, the paths of the tail, count and countthen ops asked from a
// number, but an attach's -N of a key not asked before: the file's end
// when nothing is new, joined by NUL and by newline), all
// escaped for printf %b; ph 2 prints the plan ("B N" the block file b.N
// of "@=" and made answers, "R FLAG DUP KEY CMD" an op to run, DUP 1 when
// its key ran before in this request) and writes the new ls. With no
// candidate, ph 1 prints the plan itself (and pd=1 in p1.sh): nothing is
// stated, so a first request costs one awk. No single quote: it is one in
// agentScript.
const planAwk = `
function hexv(s,  i, v) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
function after(s, n,  j, p) { for (j = 0; j < n; j++) { p = index(s, " "); if (!p) return ""; s = substr(s, p + 1) } return s }
function blk(s) { if (!bo) { nb++; bf = fo "/b." nb; bo = 1; print "B " nb } printf "%s", s > bf }
function p1open() { if (!p1) { fp1 = fo "/p1.sh"; printf "sn=\047" > fp1; p1 = 1 } }
function shut() { if (bo) { close(bf); bo = 0 } }
function quoted(e,  q, r, p) { q = "\\0047"; r = ""; while (p = index(e, q)) { r = r substr(e, 1, p - 1) q "\\0134" q q; e = substr(e, p + 5) } return r e }
FILENAME == fdt { p = index($0, " "); esc[substr($0, 1, p - 1)] = substr($0, p + 1); next }
FILENAME == ftp { tp[$2] = $0; next }
FILENAME == fls { st[$1] = after($0, 2); fl[$1] = $2; next }
FILENAME == fin && /^D / {
	e = substr($0, index(substr($0, 3), " ") + 4); esc[$2] = e
	if (ph == 1) { print $2 " " e >> fdt; p1open(); printf "A%s=\\0047%s\\0047\\0012", $2, quoted(e) > fp1 }
	next
}
FILENAME == fin && /^T / { tp[$2] = $0; if (ph == 1) print $0 >> ftp; next }
FILENAME == fin && /^R/ { nr = split(substr($0, 2), w, " "); next }
FILENAME == fin { bad = 1; exit 70 }
FILENAME == fce { ce[++nce] = $0; next }
FILENAME == fsq { sq[++nsq] = $0; next }
FILENAME == fse { if (/No such file or directory$/) gone++; next }
END {
	if (bad) exit 70
	soh = sprintf("%c", 1); em = "No such file or directory"
	i = 1
	while (i <= nr) {
		if (w[i] != "|" || i == nr || !(w[i + 1] in tp)) exit 70
		key = w[i + 1]; i += 2
		m = split(tp[key], x, " ")
		pre = "ap= an=;"; cmd = "runop " key; qp = ""; qo = ""; qn = ""
		for (j = 3; j <= m; j++) {
			t = x[j]
			if (t == "%") { if (i > nr || w[i] !~ /^-?[0-9]+$/) exit 70; t = w[i++] }
			if (j == 3) qn = t; else if (j == 5) qo = t
			if (substr(t, 1, 1) == "#") {
				a = substr(t, 2); cmd = cmd " \"$A" a "\""
				if (j == 4) { pre = "ap=\"$A" a "\" an=\"${soh}" a "\";"; qp = a }
			} else cmd = cmd " " t
		}
		no++; K[no] = key; C[no] = pre " " cmd; P[no] = ""; N[no] = qn
		if ((qn == "tail" || qn == "count" || qn == "countthen") && qo ~ /^-?[0-9]+$/ && qp != "" && (qp in esc) && !index(esc[qp], "\\0012")) {
			# an attach (-N) of a key never asked runs, and says itself whether its
			# file is gone: a first request states nothing (its key is "?" after)
			if (qo ~ /^-/ && !(key in st)) Q[no] = 1
			else { P[no] = qp; O[no] = qo; if (!(qp in seen)) { seen[qp] = 1; cand[++nc] = qp } }
		}
	}
	if (ph == 1) {
		p1open(); printf "\047\nsc=\047" > fp1
		for (c = 1; c <= nc; c++) printf "%s%s", (c > 1 ? "\\0000" : ""), esc[cand[c]] > fp1
		printf "\047\nsl=\047" > fp1
		for (c = 1; c <= nc; c++) printf "%s%s", (c > 1 ? "\\0012" : ""), esc[cand[c]] > fp1
		printf "\047\n" > fp1
		if (nc) { close(fp1); exit }
		printf "pd=1\n" > fp1; close(fp1) # nothing to stat: planned in this pass
	}
	s = 1; miss = 0
	for (c = 1; c <= nc; c++) {
		a = cand[c]; ex[a] = ""
		if (s <= nsq && after(sq[s], 3) == ce[c]) { split(sq[s++], f, " "); ex[a] = "E"; sz[a] = f[1]; mt[a] = f[2]; md[a] = f[3] } else miss++
	}
	# gone only when stat said "No such file" as often as names went unanswered
	# (an xargs without -0, a stat that failed otherwise: those ops run)
	for (c = 1; miss > 0 && miss == gone && c <= nc; c++) if (ex[cand[c]] == "") ex[cand[c]] = "N"
	for (o = 1; o <= no; o++) {
		key = K[o]; a = P[o]; now = ""
		if (a != "" && ex[a] != "") now = ex[a] == "E" ? (O[o] ~ /^[0-9]+$/ && sz[a] == O[o] ? sz[a] " " mt[a] " " md[a] " " O[o] : "") : "noent"
		was = (key in st) ? st[key] : ""; st[key] = Q[o] ? "?" : now
		if (now != "" && now == was) { blk("@= " key "\n"); continue }
		if (now != "") {
			if (now == "noent") b = "@S noent 0 0 0 " (length(a) + 1) " " (length(em) + 1) "\n" soh a em "\n" k "\n"
			else {
				ty = int(hexv(md[a]) / 4096) % 16; ty = ty == 8 ? "f" : ty == 4 ? "d" : ty == 1 ? "p" : "o"
				b = "@S " ty " " sz[a] " " mt[a] " 0 " (length(a) + 1) " 0\n" soh a k "\n"
			}
			blk("@O " key " " length(b) "\n" b); fl[key] = 1; continue
		}
		# its first run in the request writes o.KEY itself (an each joins the files of its spawns there)
		du = (key in ran); ran[key] = 1
		shut(); print "R " (fl[key] == 1 ? 1 : 0) " " du " " key " so=" (du || N[o] == "each" ? "" : "o." key) " " C[o]; fl[key] = 0
	}
	shut()
	for (key in st) print key " " (fl[key] == 1 ? 1 : 0) " " st[key] > fls
}`

// LastSizes: the bytes of the last request and of its answer.
func (a *Agent) LastSizes() (req, ans int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastReq, a.lastAns
}
