package remote

import (
	"context"
	"fmt"
	"io"
	"os/exec"

	"golang.org/x/crypto/ssh"
)

// chanStream is a Stream over an SSH exec channel.
type chanStream struct {
	ch  *ssh.Session
	in  io.WriteCloser
	out io.Reader
	s   *SSH
}

func (c *chanStream) Write(p []byte) (int, error) { return c.in.Write(p) }

func (c *chanStream) Read(p []byte) (int, error) {
	n, err := c.out.Read(p)
	if n > 0 {
		c.s.contact()
	}
	return n, err
}

// Close ends stdin (the agent's loop ends on it) and the channel.
func (c *chanStream) Close() error {
	c.in.Close()
	return c.ch.Close()
}

// Stream starts argv on its own channel of the live link; it dies with the link.
func (s *SSH) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	return withTimeout(ctx, opTimeout(ctx), func() (Stream, error) {
		ch, err := sess.link.client.NewSession()
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", argv[0], err)
		}
		in, err1 := ch.StdinPipe()
		out, err2 := ch.StdoutPipe()
		if err1 != nil || err2 != nil {
			ch.Close()
			return nil, fmt.Errorf("stream %s: pipes: %v %v", argv[0], err1, err2)
		}
		ch.Stderr = stderr
		if err := ch.Start(CommandLine(argv...)); err != nil {
			ch.Close()
			return nil, fmt.Errorf("stream %s: %w", argv[0], err)
		}
		return &chanStream{ch: ch, in: in, out: out, s: s}, nil
	})
}

// procStream is a Stream over a local process.
type procStream struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out io.Reader
}

func (p *procStream) Write(b []byte) (int, error) { return p.in.Write(b) }
func (p *procStream) Read(b []byte) (int, error)  { return p.out.Read(b) }

func (p *procStream) Close() error {
	p.in.Close()
	p.cmd.Process.Kill()
	return p.cmd.Wait()
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
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stream %s: %w", argv[0], err)
	}
	return &procStream{cmd: cmd, in: in, out: out}, nil
}
