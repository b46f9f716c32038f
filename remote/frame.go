package remote

import (
	"bytes"
	crand "crypto/rand"
	"encoding/hex"
)

// An exec's command line is read by the user's login shell, whose rc
// files (.bashrc, .zshenv, config.fish) may print on stdout and stderr
// before the command runs: a MOTD, a conda or module notice, a banner
// without a newline. Every command run over SSH is therefore framed: a
// POSIX sh prints a mark, new each exec, on both streams, then execs the
// command; what came before the mark on a stream is the shell's, not the
// command's, and is dropped. The line is plain sh, quoted as any argv, so
// bash, zsh and fish all run it alike.
const frameScript = `printf '\n%s\n' "$1"; printf '\n%s\n' "$1" >&2; shift; exec "$@"`

// execMark is a new mark: 48 random bits no rc file can know.
func execMark() string {
	var r [6]byte
	crand.Read(r[:])
	return "@SWX" + hex.EncodeToString(r[:])
}

// framedArgv runs argv after the mark.
func framedArgv(mark string, argv []string) []string {
	return append([]string{"sh", "-c", frameScript, "synthwatch-exec", mark}, argv...)
}

// afterMark is out after its first "\nMARK\n" (the mark's own newline
// first, so a banner without one stays before it). Without the mark (the
// command never ran: no sh), out is kept whole: it says why.
func afterMark(out []byte, mark string) []byte {
	m := []byte("\n" + mark + "\n")
	if i := bytes.Index(out, m); i >= 0 {
		return out[i+len(m):]
	}
	return out
}
