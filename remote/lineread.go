package remote

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"sync"
)

// LineCutError is a line from the host longer than the reader's bound: it
// was cut there, not buffered whole. A host that prints without a newline
// (a hostile or broken binary, a login rc, `yes | tr -d '\n'`) then costs
// the bound, not its output's size.
type LineCutError struct{ At int }

func (e *LineCutError) Error() string { return fmt.Sprintf("line cut at %d bytes", e.At) }

// ReadLine reads one line, its newline included, from r, bounded by r's
// buffer size (bufio.NewReaderSize). A longer line gives its first
// r.Size() bytes and a *LineCutError; the rest of it stays unread, for
// SkipLine or for the caller to give up on the stream. It is the bounded
// form of r.ReadString('\n'), which grows with the line: an endless line
// grew the laptop by gigabytes in seconds. At the stream's end it gives
// what was left and the error, as ReadString does.
func ReadLine(r *bufio.Reader) (string, error) {
	b, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return string(b), &LineCutError{At: len(b)}
	}
	return string(b), err
}

// SkipLine discards the rest of a line ReadLine cut, through its newline,
// a buffer at a time: memory stays flat whatever its length. It returns the
// bytes discarded; an endless line ends only with the stream (its deadline
// or its close).
func SkipLine(r *bufio.Reader) (int64, error) {
	var n int64
	for {
		b, err := r.ReadSlice('\n')
		n += int64(len(b))
		if !errors.Is(err, bufio.ErrBufferFull) {
			return n, err
		}
	}
}

// MaxExecOutput bounds what Exec keeps of a command's stdout: past it the
// command is ended and Exec says the output was cut. Our own commands
// answer far less (a cold batch of 50,000 categories is tens of MB).
const MaxExecOutput = 256 << 20

// maxExecStderr bounds the stderr Exec keeps: its first bytes, where a
// command says what went wrong.
const maxExecStderr = 1 << 20

// capBuffer keeps the first max bytes written to it and counts the rest;
// over is closed at the first byte past max, so the command can be ended.
type capBuffer struct {
	mu   sync.Mutex
	max  int
	buf  bytes.Buffer
	cut  int64
	over chan struct{}
}

func newCapBuffer(max int) *capBuffer { return &capBuffer{max: max, over: make(chan struct{})} }

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if len(p) <= room {
		c.buf.Write(p)
		return len(p), nil
	}
	if room > 0 {
		c.buf.Write(p[:room])
	}
	if c.cut == 0 {
		close(c.over)
	}
	c.cut += int64(len(p) - max(room, 0))
	return len(p), nil // drained, not an error: the command is not left blocked on a full pipe
}

// bytes is what was kept, and an error naming the cut when there was one.
func (c *capBuffer) bytes() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut > 0 {
		return c.buf.Bytes(), fmt.Errorf("output cut at %d bytes", c.max)
	}
	return c.buf.Bytes(), nil
}

// captured is what a command printed, or the error naming the cut when its
// stdout went past the bound.
func captured(argv0 string, out, errb *capBuffer) (ExecResult, error) {
	stdout, cut := out.bytes()
	if cut != nil {
		return ExecResult{}, fmt.Errorf("exec %s: %w", argv0, cut)
	}
	stderr, _ := errb.bytes()
	return ExecResult{Stdout: stdout, Stderr: stderr}, nil
}
