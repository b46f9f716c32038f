package remote

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
)

// LongArg is the longest argument that always travels on the exec
// request's command line; a longer one (the batch and agent scripts,
// ~10 KB, unless packed: PackCommand) travels on stdin unless the whole
// line still fits in MaxLine
// (an agent's first request, a few KB: on the line, it is answered
// without waiting for the channel's window, a round trip on OpenSSH).
// Dropbear, the SSH server of minimal and container hosts, ends the whole
// connection on any string over 9,000 bytes ("String too long",
// MAX_CMD_LEN in its sysoptions.h: a 9,000-byte line runs there, 9,001
// cuts the link), and other servers have limits of their own; the command
// line also shows in the host's ps. 8,900 leaves Dropbear 100 bytes and
// carries the fallback packed with a cold status's ops (about 8,700 for
// a root of 35 characters).
const (
	LongArg = 2048
	MaxLine = 8900
	// OpenSSHMaxLine is MaxLine on OpenSSH's sshd, which takes a command
	// as long as its packet (256 KB) and hands it to the user's shell as
	// one argument, bounded by the kernel at 128 KiB (MAX_ARG_STRLEN;
	// measured: 131,000 bytes run): half of that, for a portable line
	// (fitsLine). There a packed fallback batch past MaxLine (a longer
	// root, more ops) still goes whole on the line, not to stdin and its
	// round trip.
	OpenSSHMaxLine = 64 << 10
)

// LineLimit is the longest command line the server that sent
// serverVersion (its identification string) takes whole: OpenSSHMaxLine
// on OpenSSH (not its Windows port, whose cmd.exe stops at 8 KB), else
// MaxLine (Dropbear's and the unknown).
func LineLimit(serverVersion string) int {
	if strings.HasPrefix(serverVersion, "SSH-2.0-OpenSSH_") && !strings.HasPrefix(serverVersion, "SSH-2.0-OpenSSH_for_Windows") {
		return OpenSSHMaxLine
	}
	return MaxLine
}

// lineLimit is h's LineLimit: a host that names no server (the laptop's
// own, a link not up) gets MaxLine.
func lineLimit(h any) int {
	if v, ok := h.(versioner); ok {
		return LineLimit(v.ServerVersion())
	}
	return MaxLine
}

// WireCommand is argv as an exec request carries it: the command line, and
// what stdin must start with. A line that fits (fitsLine: the server's
// LineLimit) carries every argument. Past it, each argument longer than
// LongArg, or where the line still does not fit every word, is read back
// from stdin (stdinWord). follows says the caller sends more on stdin
// behind the words (ExecInput, a stream's requests).
func WireCommand(argv []string, max int, follows bool) (line string, stdin []byte) {
	return wireCommand(argv, max, follows, false)
}

// wireCommand is WireCommand; csh: the user's login shell ends a command
// at a newline even inside quotes (csh, tcsh: SSH.LoginCsh), so no line
// with one goes on the command line, however short.
func wireCommand(argv []string, max int, follows, csh bool) (line string, stdin []byte) {
	words := quoted(argv)
	if line = strings.Join(words, " "); fitsLine(line, max, csh) {
		return line, nil
	}
	var long []string
	for i, a := range argv {
		if len(a) <= LongArg {
			continue
		}
		v := "a" + strconv.Itoa(len(long))
		code, data := stdinWord(v, a, follows)
		long = append(long, code)
		words[i] = `"$` + v + `"`
		stdin = append(stdin, data...)
	}
	if len(long) > 0 {
		if l := "sh -c " + Quote(strings.Join(long, "")+"exec "+strings.Join(words, " ")); fitsLine(l, max, csh) {
			return l, stdin
		}
	}
	// still past it (many short arguments: a batch of hundreds of ops on
	// Dropbear, which cuts the link on a line over 9,000 bytes): every word
	// on stdin, read back by sh as a set -- of the same quoted words
	code, data := stdinWord("a", line, follows)
	return "sh -c " + Quote(code+`eval "set -- $a" && exec "$@"`), data
}

// stdinWord is the sh code that reads a word of stdin into $v, and the
// bytes that carry it. With nothing behind it on stdin, head -c reads it
// at once (the trailing "." keeps its own last newlines, which $( )
// strips). With more behind it, the word is read a line at a time by the
// shell's read, which takes no byte past its line from a pipe: busybox's
// head -c reads ahead on a pipe (measured), so what followed would be
// lost on such a host. read goes in the C locale: bash's, as sh in a
// UTF-8 one, took a lone lead byte before a newline for a character's
// start, and the newline with it. (dd bs=1, a read a byte as well, took
// 1.3 s for a 10 KB script on a loaded host; read is a builtin, for the
// rare long word with more behind it.)
func stdinWord(v, a string, follows bool) (code string, data []byte) {
	if !follows {
		return v + `=$(head -c ` + strconv.Itoa(len(a)) + `; echo .) && ` + v + `=${` + v + `%.} && `, []byte(a)
	}
	code = `LC_ALL=C IFS= read -r ` + v + ` && `
	if n := strings.Count(a, "\n"); n > 0 {
		code += `n=$(printf '\nx') && n=${n%x} && i=0 && while [ $i -lt ` + strconv.Itoa(n) +
			` ] && LC_ALL=C IFS= read -r l; do ` + v + `=$` + v + `$n$l; i=$((i+1)); done && [ $i = ` + strconv.Itoa(n) + ` ] && `
	}
	return code, []byte(a + "\n")
}

// ExitUnpack is what a packed command (PackCommand) exits with when the
// host could not unpack it: no base64 or gzip, or either failed.
const ExitUnpack = 73

// unpackScript runs a packed command, $1: it says so and exits ExitUnpack
// when unpacking fails, rather than running nothing and exiting 0. gzip -d,
// not gunzip: GNU's gunzip is a shell script that runs gzip -d, an sh and
// an exec more on every packed poll.
const unpackScript = `s=$(printf %s "$1" | base64 -d | gzip -d) && [ -n "$s" ] || ` +
	`{ echo "synthwatch: this host could not unpack the command (base64 -d | gzip -d)" >&2; exit 73; }; eval "$s"`

// PackCommand is argv, "sh -c SCRIPT NAME ARGS…", as a command that
// travels whole on the line: "sh -c UNPACK NAME BLOB", BLOB the base64 of
// "set -- ARGS…" and SCRIPT, gzip'd. ok is false when argv is not of that
// shape or its line, framed as Exec frames it, is over max; argv then
// goes as it is (WireCommand).
// On the line, OpenSSH's sshd answers it without a window to wait for: a
// round trip less than SCRIPT on stdin (the fallback's 10 KB: 2 in all).
// Only for a host known to unpack (the fallback's U record).
func PackCommand(argv []string, max int) (packed []string, ok bool) {
	if len(argv) < 4 || argv[0] != "sh" || argv[1] != "-c" {
		return nil, false
	}
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zw.Write([]byte("set -- " + strings.Join(quoted(argv[4:]), " ") + "\n" + argv[2]))
	zw.Close()
	packed = []string{"sh", "-c", unpackScript, argv[3], base64.StdEncoding.EncodeToString(z.Bytes())}
	if !OnTheLine(framedArgv(execMark(), packed), max) { // as Exec sends it (frame.go)
		return nil, false
	}
	return packed, true
}

func quoted(argv []string) []string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = Quote(a)
	}
	return words
}

// OnTheLine says whether argv travels whole on the command line of a
// server whose LineLimit is max (no argument of it on stdin).
func OnTheLine(argv []string, max int) bool {
	return fitsLine(strings.Join(quoted(argv), " "), max, false)
}

// fitsLine: line goes whole on a command line of a server whose LineLimit
// is max. Past MaxLine only a line every login shell reads as sh does
// (portable): the user's shell parses it before sh runs, and a longer
// line is what stdin carried before (the fallback's script), whose text
// fish and csh would read otherwise. Under csh (wireCommand) every line
// is portable: csh reads no newline as sh does, however short the line.
func fitsLine(line string, max int, csh bool) bool {
	return !csh && len(line) <= MaxLine || len(line) <= max && portable(line)
}

// portable says whether a line of quoted words (Quote's) means the same to
// every login shell: no newline (csh and tcsh end a command there, even
// inside single quotes), no "!" inside single quotes (tcsh expands it
// there), and no backslash before a backslash or a quote inside single
// quotes (fish reads those as escapes there). Outside quotes Quote
// writes only \', \\ and \!, which all of them read alike. A packed
// command is portable: base64 and a one-line script.
func portable(line string) bool {
	in := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\n':
			return false
		case c == '\'':
			in = !in
		case c == '\\' && !in:
			i++ // the escaped character
		case c == '\\' && i+1 < len(line) && (line[i+1] == '\\' || line[i+1] == '\''):
			return false
		case c == '!' && in: // tcsh's history, even there
			return false
		}
	}
	return true
}

// execChan is a command on a session channel of its own. Its exec request
// asks no reply and its stdin follows as soon as the channel's window
// allows (ssh.Session waits for the reply first). OpenSSH's sshd opens a
// session with no window until its command starts, so stdin there waits
// one round trip (a fallback poll sent plain is 3, packed 2: PackCommand,
// TestPollRoundTrips); servers that grant a window at the open take it at
// once.
type execChan struct {
	ch     ssh.Channel
	status chan error // the command's end: nil, *exitError, or an error of the link
}

// exitError is a command's nonzero exit status or its signal.
type exitError struct {
	code   int
	signal string
}

func (e *exitError) Error() string {
	if e.signal != "" {
		return "killed by signal " + e.signal
	}
	return fmt.Sprintf("exit status %d", e.code)
}

// startExec opens a channel and runs argv there; stdout is the channel,
// stderr its Stderr. follows: the caller writes more to stdin behind
// what WireCommand puts there. The caller copies them and closes the channel.
func startExec(c *ssh.Client, argv []string, follows, csh bool) (*execChan, error) {
	ch, reqs, err := c.OpenChannel("session", nil)
	if err != nil {
		return nil, err
	}
	line, stdin := wireCommand(argv, LineLimit(string(c.ServerVersion())), follows, csh)
	if _, err := ch.SendRequest("exec", false, ssh.Marshal(struct{ Command string }{line})); err != nil {
		ch.Close()
		return nil, err
	}
	if len(stdin) > 0 {
		if _, err := ch.Write(stdin); err != nil {
			ch.Close()
			return nil, err
		}
	}
	e := &execChan{ch: ch, status: make(chan error, 1)}
	go func() { e.status <- waitStatus(reqs) }()
	return e, nil
}

// waitStatus reads the channel's requests until it closes: the exit status
// or signal the server sent (as ssh.Session's Wait does).
func waitStatus(reqs <-chan *ssh.Request) error {
	code, signal := -1, ""
	for r := range reqs {
		switch r.Type {
		case "exit-status":
			if len(r.Payload) >= 4 {
				code = int(binary.BigEndian.Uint32(r.Payload))
			}
		case "exit-signal":
			var sig struct {
				Signal     string
				CoreDumped bool
				Error      string
				Lang       string
			}
			if ssh.Unmarshal(r.Payload, &sig) == nil {
				signal = sig.Signal
			}
		default:
			if r.WantReply {
				r.Reply(false, nil)
			}
		}
	}
	switch {
	case code == 0:
		return nil
	case code > 0:
		return &exitError{code: code}
	case signal != "":
		return &exitError{code: 128 + signalNumbers[signal], signal: signal}
	}
	return fmt.Errorf("the host sent no exit status (the connection or the command was cut)")
}

// signalNumbers are the POSIX numbers of the signals a host may name, for
// the shell's 128+N exit code.
var signalNumbers = map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "ABRT": 6, "FPE": 8, "KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15}

// kill asks the host to end the command (OpenSSH 7.9+ does, but not in a
// root login's session, which runs without privilege separation; others
// may not; closing the channel ends its stdin and output anyway, and the
// command at its next write).
func (e *execChan) kill() {
	_, _ = e.ch.SendRequest("signal", false, ssh.Marshal(struct{ Signal string }{string(ssh.SIGKILL)}))
}

// copyOut copies stdout and stderr of e to w and errw until they end.
func (e *execChan) copyOut(w, errw io.Writer) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(w, e.ch) }()
	go func() { defer wg.Done(); _, _ = io.Copy(errw, e.ch.Stderr()) }()
	return &wg
}
