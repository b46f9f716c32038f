package remote

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/synthwatch/synthwatch/remote/agentproto"
)

// readHello skips to the Go agent's marker and reads its Hello frame.
// What came before (a login rc's output, with or without a newline) is
// skipped, up to agentproto.MaxSkip bytes; the launcher's "@A NONCE
// missing|refused|mismatch …" lines say why no agent runs (the nonce proves
// the launcher said it, not a login rc). An end before the hello is
// io.EOF: no agent here this session (Kind then says why).
func (a *Agent) readHello() error {
	mark := agentproto.Marker(a.nonce)[1:]
	kind := "fallback"
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
				a.kind, a.fw = kind, nil
				return io.EOF // it ended before its hello
			}
			return fmt.Errorf("read: %w", err)
		}
		line := string(b)
		if strings.HasSuffix(line, mark) {
			return a.goHello()
		}
		if i := strings.Index(line, "@A "+a.nonce+" "); i > 0 {
			line = line[i:] // a banner without a newline before it
		}
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
			kind = fmt.Sprintf("fallback (%s answers %s to agent --proto, not %s)", path, got, AgentProto)
		}
	}
}

// noneWhy says why the launcher ran no agent (a.mu held).
func (a *Agent) noneWhy() string {
	switch {
	case a.refused != "":
		return "the installed agent is refused (its owner or mode)"
	case a.place != nil:
		return "none installed in " + cut(a.place.Dir, 256)
	case a.kind != "fallback":
		return strings.TrimSuffix(strings.TrimPrefix(a.kind, "fallback ("), ")")
	}
	return ""
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
	a.seenProgs, a.progs = h.Progs, h.Progs == progsDigest()
	if isPlatformWord(h.OS) && isPlatformWord(h.Arch) {
		a.platform = h.OS + "-" + h.Arch
	}
	return nil
}

// exchange sends req and reads the answer. A fresh agent first says
// hello (readHello); its first request, when it did not ride on the
// command line, goes after the hello.
func (a *Agent) exchange(req []byte, fresh bool, helloIn func() bool) ([]byte, error) {
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
		if req := a.pendFrame; req != nil {
			a.pendFrame = nil
			if _, err := a.st.Write(req); err != nil {
				return nil, fmt.Errorf("send: %w", err)
			}
		}
	}
	return a.readFrame()
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
