package remote

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// Found by the adversarial trial of the agent (each failed before its fix).

// A request on a black-holed link returns with its context, while the link
// still counts as up: closing the channel alone waited for the peer, so the
// poll was held until the keepalives gave the link up.
func TestAgentBlackHoledReturnsWithItsContext(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	p, o := viaProxy(t, s, "ServerAliveInterval=10", "ServerAliveCountMax=3") // given up after ~30 s
	h := dial(t, o)
	ag := NewAgent(h)
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	f := filepath.Join(t.TempDir(), "raw.jsonl")
	writeFile(t, f, strings.Repeat("{\"id\":1}\n", 100))
	b := func() *Batch { b := &Batch{}; b.Count(NewCounter(f)); return b }
	if _, err := ag.Run(context.Background(), b()); err != nil {
		t.Fatal(err)
	}
	p.SetMode(faultproxy.BlackHole)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := ag.Run(ctx, b()); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("an answer through a black hole")
		}
		if ph := h.State().Phase; ph != Connected {
			t.Errorf("Run returned only once the link was given up (%v): %v", ph, err)
		}
	case <-time.After(60 * time.Second): // bounds a hang; measures nothing
		t.Fatal("Run still blocked")
	}
}

// A start that outlives its context is closed when it comes, not left
// waiting on stdin for the life of the link.
func TestAgentLateStartLeavesNothing(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	p, o := viaProxy(t, s)
	h := dial(t, o)
	cs := &capturing{Streamer: h}
	ag := &Agent{h: cs, l: h}
	f := filepath.Join(t.TempDir(), "raw.jsonl")
	writeFile(t, f, "{}\n")
	p.SetDelay(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	b := &Batch{}
	b.Count(NewCounter(f))
	if _, err := ag.Run(ctx, b); err == nil {
		t.Log("the start came in time on this machine: nothing to leave")
	}
	cancel()
	p.SetDelay(0)
	ag.Close()
	if cs.nonce() == "" {
		t.Fatal("no start asked")
	}
	waitGone(t, cs.nonce()) // the link is still up: only closing the late start ends it
}

// capturing is a Streamer that keeps the last start's nonce (the word after
// "synthwatch-agent").
type capturing struct {
	Streamer
	mu   sync.Mutex
	last string
}

func (c *capturing) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	c.mu.Lock()
	c.last = ""
	if i := slices.Index(argv, "synthwatch-agent"); i >= 0 && i+1 < len(argv) && strings.HasPrefix(argv[i+1], "~") {
		c.last = argv[i+1] // the nonce, this start's alone (the script's hash after it is every agent's)
	}
	c.mu.Unlock()
	return c.Streamer.Stream(ctx, stderr, argv...)
}

func (c *capturing) nonce() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

type junkStreamer struct{ junk string }

func (j junkStreamer) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	a := append([]string{"sh", "-c", `printf %s "$1"; shift; exec "$@"`, "x", j.junk}, argv...)
	return Local{}.Stream(ctx, stderr, a...)
}

// What a login shell prints before the agent, with or without a newline,
// even what looks like an answer, is skipped; the answers are whole.
func TestAgentAfterLoginJunk(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "raw.jsonl")
	writeFile(t, f, strings.Repeat("{\"id\":1}\n", 100))
	for _, junk := range []string{"Welcome\n", "Welcome", "\x1b]0;title\x07", "@O 0 3\n", "@H ~0\n"} {
		ag := &Agent{h: junkStreamer{junk}}
		ag.UseBinary(selfAsBinary(t))
		for i := 0; i < 2; i++ {
			b := &Batch{}
			b.Count(NewCounter(f))
			a, err := ag.Run(context.Background(), b)
			if err != nil {
				t.Errorf("junk %q request %d: %v", junk, i, err)
				continue
			}
			if st := a.stats[f]; st.err != nil || st.fi.Size != 900 {
				t.Errorf("junk %q request %d: stat %+v", junk, i, st)
			}
		}
		if starts, _ := ag.Stats(); starts != 1 {
			t.Errorf("junk %q: %d starts", junk, starts)
		}
		ag.Close()
	}
}

// Over a real sshd whose shells print a line without a newline first (an
// rc's printf), the agent and the one-shot both answer in full.
func TestAgentAndBatchAfterRcJunkOverSSH(t *testing.T) {
	t.Parallel()
	rc := filepath.Join(t.TempDir(), "rc")
	writeFile(t, rc, "printf 'Last login: somewhere'\n")
	s := sshdtest.Start(t, sshdtest.WithConfig("SetEnv BASH_ENV="+rc, "SetEnv ENV="+rc))
	h := dial(t, opts(t, s))
	ag := NewAgent(h)
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	f := filepath.Join(t.TempDir(), "raw.jsonl")
	writeFile(t, f, strings.Repeat("{\"id\":1}\n", 100))
	batch := func() *Batch { b := &Batch{}; b.Count(NewCounter(f)); b.Cat("/proc/stat", 100); return b }
	b := batch()
	res, err := h.Exec(context.Background(), b.Argv()...)
	must(t, err)
	one, err := parseBatchOf(res.Stdout, b, nil)
	if err != nil || one.stats[f].fi.Size != 900 || len(one.reads["/proc/stat"]) == 0 {
		t.Errorf("one-shot: stat %+v, %d reads of /proc/stat, err %v", one.stats[f], len(one.reads["/proc/stat"]), err)
	}
	for i := 0; i < 3; i++ {
		a, err := ag.Run(context.Background(), batch())
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if st := a.stats[f]; st.err != nil || st.fi.Size != 900 {
			t.Errorf("request %d: no stat of the file: %+v", i, st)
		}
	}
	if starts, _ := ag.Stats(); starts != 1 {
		t.Errorf("%d starts: one agent answers every request", starts)
	}
}

// An empty batch is an empty answer, and the agent stays usable.
func TestAgentEmptyBatch(t *testing.T) {
	t.Parallel()
	ag := NewAgent(Local{})
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	if _, err := ag.Run(context.Background(), &Batch{}); err != nil {
		t.Fatal(err)
	}
	b := &Batch{}
	b.Cat("/proc/stat", 100)
	a, err := ag.Run(context.Background(), b)
	if err != nil || len(a.reads["/proc/stat"]) == 0 || !ag.Usable() {
		t.Fatalf("after an empty batch: %v, usable %v", err, ag.Usable())
	}
}

// A 20 MiB answer comes whole, then again as before (named, not sent).
func TestAgentBigAnswer(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	h := dial(t, opts(t, s))
	ag := NewAgent(h)
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	f := filepath.Join(t.TempDir(), "log")
	writeFile(t, f, strings.Repeat("0123456789abcdef\n", 20<<20/17))
	var sizes []int
	for i := 0; i < 2; i++ {
		tl := NewTail(f)
		tl.MaxPerPoll, tl.StartBack = 32<<20, 30<<20
		b := &Batch{}
		b.Tail(tl)
		a, err := ag.Run(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if rs := a.reads[f]; len(rs) == 0 || len(rs[0].data) != 20<<20/17*17 {
			t.Fatalf("round %d: %d reads", i, len(rs))
		}
		_, ans := ag.LastSizes()
		sizes = append(sizes, ans)
	}
	if sizes[1] > 1024 {
		t.Errorf("answer sizes %v: the same answer again is named", sizes)
	}
}
