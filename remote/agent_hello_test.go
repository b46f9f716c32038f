package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/remote/agentproto"
)

// A login rc's "@A …" lines before the launcher's name nothing: only a
// line with the session's nonce says which agent runs, or why none does
// (from the adversarial review of the cold poll through the agent).
func TestAgentKindNotSpoofedByLoginJunk(t *testing.T) {
	t.Parallel()
	for _, junk := range []string{"@A go /evil\n", "@A mismatch x /evil\n", "@A ~000000000000 go /evil\n"} {
		ag := &Agent{h: junkStreamer{junk}}
		b := &Batch{}
		b.Cat("/proc/stat", 100)
		if _, err := ag.Run(context.Background(), b); !errors.Is(err, ErrNoAgent) {
			t.Fatal(err)
		}
		if k := ag.Kind(); k != "fallback" {
			t.Errorf("junk %q: kind %q, want fallback", junk, k)
		}
		ag.Close()
	}
}

// diesMidAnswer is an agent that says its hello, then dies halfway
// through its answer's frame (killed, out of memory).
type diesMidAnswer struct{}

type deadStream struct{ io.Reader }

func (deadStream) Write(p []byte) (int, error) { return len(p), nil }
func (deadStream) Close() error                { return nil }

func (diesMidAnswer) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	nonce := argv[4]
	var out bytes.Buffer
	out.WriteString("Welcome" + agentproto.Marker(nonce))
	w := agentproto.NewWriter(&out)
	if err := w.Send(agentproto.Hello{Nonce: nonce, Proto: AgentProto}); err != nil {
		return nil, err
	}
	f, err := w.Frame(agentproto.Answer{Ops: []agentproto.OpAnswer{{Key: 0, Data: []byte("@R ok 0 1 0 10 2\n/proc/statx\n")}}})
	if err != nil {
		return nil, err
	}
	out.Write(f[:len(f)/2])
	return deadStream{&out}, nil
}

// It failed that request; it is no host that cannot run an agent, so the
// next poll tries one again (it was given up for the session).
func TestAgentDiedMidAnswerIsNotNoAgent(t *testing.T) {
	t.Parallel()
	ag := &Agent{h: diesMidAnswer{}}
	t.Cleanup(ag.Close)
	b := &Batch{}
	b.Cat("/proc/stat", 100)
	b.Cat("/proc/uptime", 100)
	_, err := ag.Run(context.Background(), b)
	if err == nil || errors.Is(err, ErrNoAgent) || !ag.Usable() {
		t.Errorf("an agent that said hello and died mid-answer: usable %v, %v", ag.Usable(), err)
	}
}

// endlessBanner is a login shell that prints without end and no newline.
type endlessBanner struct{}

func (endlessBanner) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	return Local{}.Stream(ctx, stderr, "sh", "-c", `yes y | tr -d '\n'`)
}

// The Go agent reads through banners that mimic its own marker with
// another nonce; an endless banner is given up on past MaxSkip, with the
// laptop's memory bounded, not buffered until the host stops.
func TestGoAgentHelloThroughJunk(t *testing.T) {
	t.Parallel()
	for _, junk := range []string{"\n@SWAGENT ~000000000000\n", "@SWAGENT ~abc\n\x01\x02hello", "@A ~000000000000 refused - 0 /x\n"} {
		ag := &Agent{h: junkStreamer{junk}}
		ag.UseBinary(selfAsBinary(t))
		if _, err := ag.Run(context.Background(), loadBatch()); err != nil {
			t.Fatalf("junk %q: %v", junk, err)
		}
		if k := ag.Kind(); !strings.HasPrefix(k, "go ") {
			t.Errorf("junk %q: kind %q, want the Go agent", junk, k)
		}
		ag.Close()
	}
	ag := &Agent{h: endlessBanner{}}
	t.Cleanup(ag.Close)
	if _, err := ag.Run(context.Background(), loadBatch()); err == nil || !strings.Contains(err.Error(), "before the agent's hello") {
		t.Fatalf("an endless banner: %v", err)
	}
}
