package remote

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// A login rc's "@A …" lines before the shell agent's hello name nothing:
// only a line with the session's nonce says which agent runs (from the
// adversarial review of the cold poll through the agent).
func TestAgentKindNotSpoofedByLoginJunk(t *testing.T) {
	t.Parallel()
	for _, junk := range []string{"@A go /evil\n", "@A mismatch x /evil\n", "@A ~000000000000 go /evil\n"} {
		ag := &Agent{h: junkStreamer{junk}}
		b := &Batch{}
		b.Cat("/proc/stat", 100)
		if _, err := ag.Run(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		if k := ag.Kind(); k != "shell" {
			t.Errorf("junk %q: kind %q, want shell", junk, k)
		}
		ag.Close()
	}
}

// diesMidAnswer is an agent that says its hello, then dies between two
// records of its answer (killed, out of memory).
type diesMidAnswer struct{}

func (diesMidAnswer) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	return Local{}.Stream(ctx, stderr, "sh", "-c", `read -r _; echo "@H $1"; echo "@O 0 2"; printf 'x\n'; exit 0`, "x", argv[4])
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
