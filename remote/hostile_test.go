package remote

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// hostileDir is a root whose small files are not what they should be: a
// FIFO at worker.json, pipeline.toml and raw_responses.jsonl, a directory
// at the kill note. Its cleanup opens every FIFO for writing, so a reader
// a failing run left blocked ends too.
func hostileDir(t *testing.T) (dir string, fifos []string) {
	t.Helper()
	dir = t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "run", "synthwatch-kill"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "prepared", "A"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "prepared", "B"), 0o755))
	writeFile(t, filepath.Join(dir, "prepared", "B", "raw_responses.jsonl"), "{\"id\":1}\n")
	for _, f := range []string{"run/worker.json", "pipeline.toml", "prepared/A/raw_responses.jsonl", "prepared/A/runs.jsonl"} {
		p := filepath.Join(dir, f)
		must(t, syscall.Mkfifo(p, 0o644))
		fifos = append(fifos, p)
	}
	unblock := func() {
		for _, p := range fifos {
			if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil { // never blocks: it is its own writer
				f.Close()
			}
		}
	}
	// a read that blocks fails the test instead of hanging it: past a
	// generous wait, the FIFOs get a writer and the readers their EOF
	dog := time.AfterFunc(90*time.Second, func() {
		t.Errorf("a read blocked on a FIFO for 90 s")
		for i := 0; i < 50; i++ {
			unblock()
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Cleanup(func() { dog.Stop(); unblock() })
	return dir, fifos
}

// hostileBatch asks of hostileDir what a poll asks.
func hostileBatch(dir string) func() *Batch {
	return func() *Batch {
		b := &Batch{}
		b.Cat(filepath.Join(dir, "pipeline.toml"), 1<<20)
		b.Cat(filepath.Join(dir, "run", "worker.json"), 4<<20)
		b.Cat(filepath.Join(dir, "run", "synthwatch-kill"), 4096)
		prep := filepath.Join(dir, "prepared")
		b.Each(prep, []*Tail{NewTail("runs.jsonl")}, []*Counter{NewCounter("raw_responses.jsonl")})
		b.Count(NewCounter(filepath.Join(prep, "A", "raw_responses.jsonl")))
		b.Tail(NewTail(filepath.Join(prep, "A", "runs.jsonl")))
		b.Count(NewCounter(filepath.Join(prep, "B", "raw_responses.jsonl")))
		b.Procs(filepath.Join(dir, "run", "worker.json"), []string{"true"})
		return b
	}
}

// checkHostile fails unless a's answers name each bad small file as an
// error (not a regular file) and still read the good one.
func checkHostile(t *testing.T, a *answers, dir string) {
	t.Helper()
	for _, f := range []string{"pipeline.toml", "run/worker.json", "run/synthwatch-kill"} {
		rs := a.reads[filepath.Join(dir, f)]
		if len(rs) != 1 || rs[0].err == nil || !strings.Contains(rs[0].err.Error(), "not a regular file") {
			t.Errorf("%s: %+v, want one error saying it is not a regular file", f, rs)
		}
	}
	if st := a.stats[filepath.Join(dir, "prepared", "B", "raw_responses.jsonl")]; st.err != nil || st.fi.Size != 9 {
		t.Errorf("the good category's file: %+v", st)
	}
}

// processesNaming lists the host's processes whose command line holds s,
// but the agents themselves: their first request, on the command line,
// names the root while they live.
func processesNaming(s string) []string {
	var out []string
	for _, p := range agentProcs(s) {
		b, _ := os.ReadFile(filepath.Join("/proc", p, "cmdline"))
		if !strings.Contains(string(b), "synthwatch-agent") && !strings.Contains(string(b), "\x00agent\x00--serve\x00") {
			out = append(out, p)
		}
	}
	return out
}

// waitNoneNaming fails when a process naming s is still there after a
// generous wait: a read that blocked leaves one for good.
func waitNoneNaming(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second) // bounds a hang; measures nothing
	for len(processesNaming(s)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes left on the host reading the root: %v", processesNaming(s))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A FIFO or a directory where a poll reads a small file is an error that
// names it, from the one-shot batch and both agents alike, at once: no op
// opens a FIFO (it would wait for a writer for good), and nothing is left
// blocked on the host (the adversarial trial: status hung 2 minutes, then
// printed an empty table, and left a blocked head per poll).
func TestHostileFilesAnswerLikeTheOneShot(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"go"} {
		t.Run(kind, func(t *testing.T) {
			ag := both(t)[kind]
			dir, _ := hostileDir(t)
			batch := hostileBatch(dir)
			for round := 0; round < 2; round++ {
				want := sameAsOneShot(t, ag, batch, round)
				checkHostile(t, want, dir)
			}
			waitNoneNaming(t, dir)
		})
	}
}

// The same over a real sshd: the one-shot batch by exec, and the agent on
// its channel, answer at once and leave nothing running.
func TestHostileFilesOverSSH(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	h := dial(t, opts(t, s))
	dir, _ := hostileDir(t)
	batch := hostileBatch(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // bounds a hang
	defer cancel()
	b := batch()
	res, err := h.Exec(ctx, b.Argv()...)
	must(t, err)
	one, err := parseBatchOf(res.Stdout, b, nil)
	must(t, err)
	checkHostile(t, one, dir)
	ag := NewAgent(h)
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	for i := 0; i < 2; i++ {
		a, err := ag.Run(ctx, batch())
		if err != nil {
			t.Fatalf("agent request %d: %v", i, err)
		}
		checkHostile(t, a, dir)
	}
	waitNoneNaming(t, dir)
}

// A local root reads a FIFO as an error at once (status --local).
func TestLocalReadAtRefusesAFIFO(t *testing.T) {
	t.Parallel()
	dir, fifos := hostileDir(t)
	_ = dir
	done := make(chan error, 1)
	go func() { _, err := Local{}.ReadAt(context.Background(), fifos[0], 0, 100); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a FIFO)") || !strings.Contains(err.Error(), fifos[0]) {
			t.Fatalf("err %v, want one naming the FIFO", err)
		}
	case <-time.After(30 * time.Second): // bounds a hang; measures nothing
		t.Fatal("ReadAt blocked on a FIFO")
	}
}
