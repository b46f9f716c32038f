package remote

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
// before anything reaches its stdin; the next ones come on stdin, behind
// the shell agent's script, which it skips. A request too long for the
// line waits for stdin (the shell agent's too).
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
	for i := range 200 {
		p := filepath.Join(dir, strings.Repeat("d", 40)+strconv.Itoa(i))
		long.Cat(p, 100)
	}
	long.Cat(f, 100)
	if tmp := (&Agent{alias: map[string]int{}, keys: map[string]int{}}); OnTheLine([]string{string(tmp.encode(long))}) {
		t.Fatal("the long request fits the line: make it longer")
	}
	for name, bin := range map[string]string{"go": selfAsBinary(t), "sh": filepath.Join(dir, "absent")} {
		ag := NewAgent(Local{})
		ag.UseBinary(bin)
		t.Cleanup(ag.Close)
		if a, err := ag.Run(context.Background(), long); err != nil || string(a.reads[f][0].data) != "two\n" {
			t.Fatalf("%s: a long first request: %v", name, err)
		}
	}
}

// The shell agent keeps its script in the user's cache: the next start
// answers its first request from the command line before stdin opens, as
// the binary does, then skips the script that came on stdin anyway. A
// host with no cache (no HOME) reads the script from stdin every time.
func TestShellAgentRunsFromItsCachedScript(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir := t.TempDir()
	f := filepath.Join(dir, "a.txt")
	writeFile(t, f, "one\n")
	b := &Batch{}
	b.Cat(f, 100)
	first := NewAgent(Local{})
	first.UseBinary(filepath.Join(dir, "absent"))
	t.Cleanup(first.Close)
	if a, err := first.Run(context.Background(), b); err != nil || string(a.reads[f][0].data) != "one\n" {
		t.Fatalf("first start: %v", err)
	}
	kept := filepath.Join(cache, "synthwatch", "synthwatch-agent-"+agentScriptHash+".sh")
	if got, err := os.ReadFile(kept); err != nil || string(got) != agentScript {
		t.Fatalf("the script was not kept whole at %s: %v (%d bytes)", kept, err, len(got))
	}
	h := heldStdin{release: make(chan struct{})}
	next := NewAgent(h)
	next.UseBinary(filepath.Join(dir, "absent"))
	t.Cleanup(next.Close)
	if a, err := next.Run(context.Background(), b); err != nil || string(a.reads[f][0].data) != "one\n" {
		t.Fatalf("a start from the cache, stdin held: %v", err)
	}
	close(h.release)
	writeFile(t, f, "two\n")
	if a, err := next.Run(context.Background(), b); err != nil || string(a.reads[f][0].data) != "two\n" {
		t.Fatalf("the next request, behind the script on stdin: %v", err)
	}
}
