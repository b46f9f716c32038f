package remote

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// The temp dir a shell agent and the one-shot name by the nonce, under a
// TMPDIR whose name holds a space (sshd's session sets it): both answer
// alike over requests, and nothing is left in it once the agent is closed
// (its shell sees stdin end, and its trap removes the dir).
func TestShellAgentUnderAnOddTMPDIR(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	tmp := filepath.Join(t.TempDir(), "with space")
	must(t, os.MkdirAll(tmp, 0o755))
	s := sshdtest.Start(t, sshdtest.WithConfig(`SetEnv "TMPDIR=`+tmp+`"`))
	h := dial(t, opts(t, s))
	dir := t.TempDir()
	f := filepath.Join(dir, "raw.jsonl")
	writeFile(t, f, recs(0, 50))
	batch := func() *Batch {
		b := &Batch{}
		c := NewCounter(f)
		c.RemoteAbove = 0
		b.Count(c)
		b.Tail(NewTail(f))
		b.Cat(f, 1<<20)
		return b
	}
	ag := NewAgent(h)
	seen := false
	for round := 0; round < 3; round++ {
		if _, err := ag.Run(t.Context(), batch()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if e, _ := os.ReadDir(tmp); len(e) > 0 {
			seen = true
		}
		appendFile(t, f, recs(50*round+50, 50*round+100))
	}
	if !seen {
		t.Fatal("the agent made nothing under TMPDIR: the test did not reach it")
	}
	ag.Close()
	var left []os.DirEntry
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left, _ = os.ReadDir(tmp); len(left) == 0 {
			break
		}
	}
	if len(left) != 0 {
		t.Fatalf("left in TMPDIR: %v", left)
	}
}

// The same for an agent on this machine (--local): Close ends its stdin and
// lets its shell's trap remove the temp dir before anything is killed.
func TestLocalShellAgentLeavesNoTempDir(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "tmp")
	must(t, os.MkdirAll(tmp, 0o755))
	t.Setenv("TMPDIR", tmp)
	f := filepath.Join(t.TempDir(), "raw.jsonl")
	writeFile(t, f, recs(0, 50))
	for round := 0; round < 3; round++ {
		ag := NewAgent(Local{})
		b := &Batch{}
		c := NewCounter(f)
		c.RemoteAbove = 0
		b.Count(c)
		b.Tail(NewTail(f))
		if _, err := ag.Run(t.Context(), b); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if e, _ := os.ReadDir(tmp); len(e) == 0 {
			t.Fatalf("round %d: the agent made nothing under TMPDIR: the test did not reach it", round)
		}
		ag.Close()
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Fatalf("round %d: left in TMPDIR after Close: %v", round, left)
		}
	}
}

// graceStreamer gives its local streams a grace of an hour: a Close that
// waited on a busy agent would hold the test to its deadline.
type graceStreamer struct{}

func (graceStreamer) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	st, err := Local{}.Stream(ctx, stderr, argv...)
	if err == nil {
		st.(*procStream).grace = time.Hour
	}
	return st, err
}

// A request past its time ends a local agent at once: it is killed (its
// answer would come out of turn), not given the grace an idle one has to
// end on its stdin's end (an hour here). The agent reads a FIFO no one
// writes; Run returns within a minute of its 2 s, and a second Run starts
// anew.
func TestLocalAgentPastItsTimeIsKilledNotWaitedOn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	f := filepath.Join(dir, "raw.jsonl")
	writeFile(t, f, recs(0, 5))
	ag := &Agent{h: graceStreamer{}}
	t.Cleanup(ag.Close)
	b := &Batch{}
	b.Exec("cat", fifo)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := ag.Run(ctx, b); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a read of a FIFO no one writes answered")
		}
	case <-time.After(time.Minute):
		t.Fatal("Run still waits a minute after its time: the agent was given Close's grace, not killed")
	}
	b = &Batch{}
	b.Count(NewCounter(f))
	if _, err := ag.Run(t.Context(), b); err != nil {
		t.Fatalf("the next request: %v", err)
	}
}
