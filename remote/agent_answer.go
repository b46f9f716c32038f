package remote

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/synthwatch/synthwatch/remote/agentproto"
)

// readHello skips to the fresh agent's hello: the shell agent's "@H
// NONCE" line, or the Go agent's marker and its Hello frame. What came
// before (a login rc's output, with or without a newline) is skipped, up
// to agentproto.MaxSkip bytes; the launcher's "@A NONCE mismatch GOT
// PATH" before the shell's hello says why the binary does not serve.
func (a *Agent) readHello() error {
	hello := "@H " + a.nonce + "\n"
	mark := agentproto.Marker(a.nonce)[1:]
	kind := "shell"
	skipped := 0
	for {
		b, err := a.rd.ReadSlice('\n')
		skipped += len(b)
		if skipped > agentproto.MaxSkip {
			return fmt.Errorf("%d bytes before the agent's hello", skipped)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF {
				return io.EOF // it ended before its hello
			}
			return fmt.Errorf("read: %w", err)
		}
		line := string(b)
		if strings.HasSuffix(line, mark) {
			return a.goHello()
		}
		if strings.HasSuffix(line, hello) {
			a.kind, a.fw = kind, nil
			return nil
		}
		// the nonce proves the launcher said it, not a login rc
		if m, ok := strings.CutPrefix(line, "@A "+a.nonce+" missing "); ok {
			if p, ok := parsePlace(m); ok {
				a.place = &p
			}
		}
		if m, ok := strings.CutPrefix(line, "@A "+a.nonce+" refused "); ok {
			a.refused = strings.TrimSuffix(m, "\n")
		}
		if m, ok := strings.CutPrefix(line, "@A "+a.nonce+" mismatch "); ok {
			got, path, _ := strings.Cut(strings.TrimSuffix(m, "\n"), " ")
			path = cut(path, 256)
			if got == "" {
				got = "nothing"
			}
			kind = fmt.Sprintf("shell (%s answers %s to agent --proto, not %s)", path, got, AgentProto)
		}
	}
}

// goHello reads the Go agent's Hello frame, after its marker: from here
// on the session speaks agentproto's frames.
func (a *Agent) goHello() error {
	a.fr = agentproto.NewReader(a.rd)
	var h agentproto.Hello
	if err := a.fr.Recv(&h); err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if h.Nonce != a.nonce || h.Proto != AgentProto {
		return fmt.Errorf("the agent's hello: nonce %q, protocol %q, want %s", cut(h.Nonce, 64), cut(h.Proto, 64), AgentProto)
	}
	a.kind, a.fw = "go "+cut(h.Exe, 256), a.gw
	a.hello = h
	return nil
}

// exchange sends req and reads the answer. A fresh agent first says
// hello (readHello); its first request, when it did not ride on the
// command line, goes once the hello said which agent reads it.
func (a *Agent) exchange(req []byte, fresh bool, helloIn func() bool) ([]byte, error) {
	if a.feed != nil && !fresh {
		<-a.feed // the script and the first request went before this one
		a.feed = nil
	}
	if req != nil {
		if _, err := a.st.Write(req); err != nil {
			return nil, fmt.Errorf("send: %w", err)
		}
	}
	if fresh {
		if err := a.readHello(); err != nil {
			return nil, err
		}
		if !helloIn() {
			return nil, errors.New("hello past its time")
		}
		if err := a.sendPending(); err != nil {
			return nil, err
		}
	}
	if a.fw != nil {
		return a.readFrame()
	}
	return a.readText(fresh)
}

// sendPending sends a fresh agent's first request, when it did not ride
// on the command line: behind the script, in the spelling of the agent
// that said hello.
func (a *Agent) sendPending() error {
	req := a.pendText
	if a.fw != nil {
		req = a.pendFrame
	}
	a.pendText, a.pendFrame = nil, nil
	if req == nil {
		return nil
	}
	<-a.feed
	a.feed = nil
	if _, err := a.st.Write(req); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// readFrame reads the Go agent's Answer: each op's records, or "as last
// time" for a key whose answer did not change.
func (a *Agent) readFrame() ([]byte, error) {
	var ans agentproto.Answer
	if err := a.fr.Recv(&ans); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // after its hello, an end is a death mid-answer
		}
		return nil, fmt.Errorf("read: %w", err)
	}
	if ans.Err != "" {
		return nil, fmt.Errorf("the agent refused the request: %s", cut(ans.Err, 512))
	}
	var out []byte
	a.lastAns = 0
	for _, op := range ans.Ops {
		a.lastAns += len(op.Data) + 8
		if op.Same {
			prev, ok := a.outs[op.Key]
			if !ok {
				return nil, fmt.Errorf("answer %d names nothing sent before", op.Key)
			}
			out = append(out, prev...)
			continue
		}
		a.outs[op.Key] = op.Data
		out = append(out, op.Data...)
	}
	return out, nil
}

// readText reads the shell agent's answer: per op "@= KEY" (as last time)
// or "@O KEY LEN" and LEN bytes, then "@E NONCE".
func (a *Agent) readText(fresh bool) ([]byte, error) {
	var out []byte
	a.lastAns = 0
	for {
		line, err := ReadLine(a.rd) // bounded: an endless line is a bad answer, not a growing buffer
		a.lastAns += len(line)
		var lc *LineCutError
		if errors.As(err, &lc) {
			return nil, fmt.Errorf("bad answer: %w", err)
		}
		if err != nil {
			if err == io.EOF && line == "" && !fresh {
				return nil, io.EOF
			}
			// after its hello, an end is a death mid-answer, not a host that cannot run it
			return nil, fmt.Errorf("read: %w", io.ErrUnexpectedEOF)
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "@E" && f[1] == a.nonce:
			return out, nil
		case len(f) == 2 && f[0] == "@=":
			k, err := strconv.Atoi(f[1])
			prev, ok := a.outs[k]
			if err != nil || !ok {
				return nil, fmt.Errorf("answer %q names nothing sent before", strings.TrimSpace(line))
			}
			out = append(out, prev...)
		case len(f) == 3 && f[0] == "@O":
			k, err1 := strconv.Atoi(f[1])
			n, err2 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil || n < 0 || n > maxAnswer {
				return nil, fmt.Errorf("bad answer %q", strings.TrimSpace(line))
			}
			data := make([]byte, n)
			if _, err := io.ReadFull(a.rd, data); err != nil {
				return nil, fmt.Errorf("read: %w", err)
			}
			a.lastAns += n
			a.outs[k] = data
			out = append(out, data...)
		default:
			return nil, fmt.Errorf("bad answer %q", head([]byte(line)))
		}
	}
}

// maxAnswer bounds one op's answer (its reads are bounded by the caller's
// MaxPerPoll; this only keeps a broken host from filling memory).
const maxAnswer = 256 << 20
