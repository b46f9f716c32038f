package remote

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/remote/agentproto"
)

// heldStdin is a host whose streams take nothing on stdin until released:
// an OpenSSH session channel before the server opens its window, which it
// does only once the exec is in (a round trip).
type heldStdin struct {
	Local
	release chan struct{}
}

type heldStream struct {
	Stream
	release chan struct{}
}

func (h heldStdin) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	st, err := h.Local.Stream(ctx, stderr, argv...)
	if err != nil {
		return nil, err
	}
	return heldStream{st, h.release}, nil
}

func (s heldStream) Write(p []byte) (int, error) {
	<-s.release
	return s.Stream.Write(p)
}

// heldBinaryAgent is the deployed binary's agent on a host whose stdin is
// held shut until h.release closes.
func heldBinaryAgent(t *testing.T) (*Agent, heldStdin) {
	h := heldStdin{release: make(chan struct{})}
	ag := NewAgent(h)
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	return ag, h
}

// The deployed binary answers the first request from the command line,
// before anything reaches its stdin; the next ones come on stdin. A
// request too long for the line follows the hello on stdin.
func TestAgentFirstRequestOnTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "a.txt")
	writeFile(t, f, "one\n")
	ag, h := heldBinaryAgent(t)
	b := &Batch{}
	b.Cat(f, 100)
	a, err := ag.Run(context.Background(), b) // stdin held: only the command line reached the host
	if err != nil || len(a.reads[f]) != 1 || string(a.reads[f][0].data) != "one\n" {
		t.Fatalf("first request: %v %+v", err, a)
	}
	if !goAgentRuns(t, ag) {
		t.Fatal("the binary did not answer")
	}
	close(h.release)
	writeFile(t, f, "two\n")
	if a, err = ag.Run(context.Background(), b); err != nil || string(a.reads[f][0].data) != "two\n" {
		t.Fatalf("second request, on stdin after the script: %v %+v", err, a)
	}

	// a first request past the line's limit follows the script on stdin
	long := &Batch{}
	for i := range 400 { // names that do not deflate away (the frame is deflated)
		p := filepath.Join(dir, fmt.Sprintf("%x", sha256.Sum256([]byte(strconv.Itoa(i)))))
		long.Cat(p, 100)
	}
	long.Cat(f, 100)
	tmp := &Agent{alias: map[string]int{}, keys: map[string]int{}}
	if fr, _ := agentproto.NewWriter(nil).Frame(tmp.plan(long)); OnTheLine([]string{string(fr)}, MaxLine) {
		t.Fatal("the long request fits the line: make it longer")
	}
	for name, bin := range map[string]string{"go": selfAsBinary(t)} {
		ag := NewAgent(Local{})
		ag.UseBinary(bin)
		t.Cleanup(ag.Close)
		if a, err := ag.Run(context.Background(), long); err != nil || string(a.reads[f][0].data) != "two\n" {
			t.Fatalf("%s: a long first request: %v", name, err)
		}
	}
}

// With no agent to run (none installed, no binary), the launcher ends
// before a hello, having said where the agent would go; it writes nothing
// on the host (the shell agent kept its script in the user's cache, and
// ran whatever sat there): the poll then reads by the fallback, which
// caches nothing either.
func TestNoAgentLeavesTheHostAsItWas(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	dir := t.TempDir()
	f := filepath.Join(dir, "a.txt")
	writeFile(t, f, "one\n")
	b := &Batch{}
	cat := b.Cat(f, 100)
	ag := NewAgent(Local{})
	ag.UseBinary(filepath.Join(dir, "absent"))
	t.Cleanup(ag.Close)
	if _, err := ag.Run(context.Background(), b); !errors.Is(err, ErrNoAgent) || !strings.Contains(err.Error(), "none installed in "+agentDir(home)) {
		t.Fatalf("no agent: %v", err)
	}
	if ag.Usable() {
		t.Error("the agent is tried again this session")
	}
	if k := ag.Kind(); k != "fallback" {
		t.Errorf("kind %q", k)
	}
	if err := NewFallback(Local{}).Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if r, ok := cat.Result(); !ok || r.Err != nil || string(r.Data) != "one\n" {
		t.Fatalf("the fallback's read: %v %q %v", ok, r.Data, r.Err)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Errorf("left in HOME: %v", ents)
	}
}
