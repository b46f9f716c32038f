// Package remote reaches the GPU host: over SSH (x/crypto/ssh + pkg/sftp)
// the way the user's own ssh would, or on this machine's filesystem. It dials,
// authenticates, checks host keys, keeps the link alive, reconnects, tails
// files at offsets and counts lines incrementally. Every call takes a
// context and has a deadline.
package remote

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"strings"
	"time"
)

// Host is what the pipeline uses to read and steer the host.
type Host interface {
	// Stat describes a file; a missing one gives an error matching fs.ErrNotExist.
	Stat(ctx context.Context, path string) (FileInfo, error)
	// ReadAt reads up to n bytes of path from off. Fewer bytes mean EOF.
	ReadAt(ctx context.Context, path string, off int64, n int) ([]byte, error)
	// Glob lists paths matching a pattern (path.Match syntax).
	Glob(ctx context.Context, pattern string) ([]string, error)
	// Exec runs argv on the host; every argument is shell-quoted. A non-zero
	// exit status is a result, not an error.
	Exec(ctx context.Context, argv ...string) (ExecResult, error)
	// DialTCP opens a TCP connection from the host's side (direct-tcpip), e.g.
	// to the server's 127.0.0.1:30000.
	DialTCP(ctx context.Context, addr string) (net.Conn, error)
	// WriteFile writes data to a temp file beside path, then renames it.
	WriteFile(ctx context.Context, path string, data []byte, mode uint32) error
	Close() error
}

// FileInfo is a file's stat.
type FileInfo struct {
	Name    string
	Size    int64
	ModTime time.Time
	IsDir   bool
	// Mode is the file's type (fs.ModeType bits): 0 for a regular file;
	// fs.ModeIrregular for one the host's answer says only is neither a
	// regular file nor a directory.
	Mode fs.FileMode
}

// ExecResult is what a command printed and how it ended.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// DefaultOpTimeout bounds any single operation whose context has no deadline.
const DefaultOpTimeout = 30 * time.Second

func withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultOpTimeout)
}

// Quote makes s one word for a POSIX shell, whatever it holds, and for
// the user's login shell that reads the exec's line first:
//   - a backslash goes outside the single quotes, escaped, as a quote
//     does, since fish reads \\ and \' inside them as escapes (the awk's
//     regexps in tokens.sh, a path with a backslash) where sh reads them as
//     they are;
//   - so does a "!", which tcsh expands even inside single quotes;
//   - a word that starts with "=" or "%" is quoted: zsh reads =ls as ls's
//     path, tcsh =1 as the directory stack, and fish %self as its pid.
func Quote(s string) string {
	if s != "" && s[0] != '=' && s[0] != '%' && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + quoteInner.Replace(s) + "'"
}

var quoteInner = strings.NewReplacer(`'`, `'\''`, `\`, `'\\'`, `!`, `'\!'`)

// CommandLine quotes every argument and joins them.
func CommandLine(argv ...string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

// ErrDisconnected is returned by SSH operations while the link is down.
var ErrDisconnected = errors.New("not connected to the host")
