package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// chanStream is a Stream over an SSH exec channel. Its stdout is copied
// through a pipe, so Close ends a Read at once: closing the channel alone
// waits for the peer, and a black-holed peer never answers.
type chanStream struct {
	ch     *execChan
	out    *io.PipeReader
	ended  chan struct{} // closed when stdout ends: the command (or the link) has ended
	stderr chan struct{} // closed when its stderr has been copied
	once   sync.Once     // a late request's timer and the agent may both close it
}

func (c *chanStream) Write(p []byte) (int, error) { return c.ch.ch.Write(p) }
func (c *chanStream) Read(p []byte) (int, error)  { return c.out.Read(p) }

// Close ends the reads and the channel (the agent's loop ends with its stdin).
// A command that has ended gets a moment for its stderr to be copied, so
// what it said as it died is there to read (Wait does that copying).
func (c *chanStream) Close() error {
	var err error
	c.once.Do(func() {
		c.out.CloseWithError(errStreamClosed)
		select {
		case <-c.ended:
			select {
			case <-c.stderr:
			case <-time.After(time.Second):
			}
		default:
		}
		// the channel's close ends the agent's stdin on the host; no EOF of
		// its own (CloseWrite), which races a Write still under way
		err = c.ch.ch.Close()
	})
	return err
}

var errStreamClosed = errors.New("stream closed")

// Stream starts argv on its own channel of the live link; it dies with the
// link. A start that comes after ctx ended is closed, not left running.
func (s *SSH) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if err := sess.beforeExec(ctx); err != nil {
		return nil, fmt.Errorf("stream %s: %w", argv[0], err)
	}
	type res struct {
		st  *chanStream
		err error
	}
	ch := make(chan res, 1)
	go func() {
		st, err := s.startStream(sess, stderr, argv)
		ch <- res{st, err}
	}()
	select {
	case r := <-ch:
		return r.st, r.err
	case <-ctx.Done():
		go func() { // the start may still come: close it, or it waits on stdin for the link's life
			if r := <-ch; r.st != nil {
				r.st.Close()
			}
		}()
		return nil, fmt.Errorf("stream %s: %w", argv[0], ctx.Err())
	}
}

func (s *SSH) startStream(sess *session, stderr io.Writer, argv []string) (*chanStream, error) {
	ch, err := startExec(sess.link.client, argv, true, s.csh.Load())
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", argv[0], err)
	}
	if stderr == nil {
		stderr = io.Discard
	}
	errDone := make(chan struct{})
	go func() { _, _ = io.Copy(stderr, ch.ch.Stderr()); close(errDone) }()
	pr, pw := io.Pipe()
	ended := make(chan struct{})
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := ch.ch.Read(buf)
			if n > 0 {
				s.contact()
				if _, werr := pw.Write(buf[:n]); werr != nil {
					return // closed by this end
				}
			}
			if err != nil {
				close(ended) // before the reader can see the end
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return &chanStream{ch: ch, out: pr, ended: ended, stderr: errDone}, nil
}

// procStream is a Stream over a local process.
type procStream struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   io.Reader
	grace time.Duration // procStreamGrace (tests make it longer)
	once  sync.Once
}

func (p *procStream) Write(b []byte) (int, error) { return p.in.Write(b) }
func (p *procStream) Read(b []byte) (int, error)  { return p.out.Read(b) }

// procStreamGrace is how long Close waits for the process to end on its
// stdin's end (a command's trap removes its temp dir then) before it
// kills it: a SIGKILL runs no trap. An idle agent ends in a few ms; a busy
// one is ended by Kill (abort), not waited on.
const procStreamGrace = 2 * time.Second

// Kill ends the process and its group now, then closes the stream.
func (p *procStream) Kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.Close()
}

func (p *procStream) Close() error {
	var err error
	p.once.Do(func() {
		p.in.Close()
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		// its group: sh -c forks the command, which outlived a kill of sh,
		// holding stderr (Wait's copy) open; after a clean end, anything it left
		kill := func() { syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }
		select {
		case err = <-done:
			kill()
		case <-time.After(p.grace):
			kill()
			err = <-done
		}
	})
	return err
}

// Stream runs argv here, through sh as the SSH host would.
func (Local) Stream(_ context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	cmd := exec.Command("/bin/sh", "-c", CommandLine(argv...))
	in, err1 := cmd.StdinPipe()
	out, err2 := cmd.StdoutPipe()
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("stream %s: pipes: %v %v", argv[0], err1, err2)
	}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second // a process that left the group still does not hold Close
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stream %s: %w", argv[0], err)
	}
	return &procStream{cmd: cmd, in: in, out: out, grace: procStreamGrace}, nil
}
