package remote

import (
	"context"
	"errors"
	"fmt"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testawk"
)

// straced runs the agent under strace -f, its forks counted in log.
type straced struct{ log string }

func (s straced) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	a := append([]string{"strace", "-f", "--seccomp-bpf", "-qq", "-e", "trace=fork,vfork,clone,clone3", "-o", s.log}, argv...)
	return Local{}.Stream(ctx, stderr, a...)
}

var forkLine = regexp.MustCompile(`(?m)^\d+ +(clone3?|v?fork)\(`)

func forksIn(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	must(t, err)
	return len(forkLine.FindAll(b, -1))
}

func needStrace(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace not found (apt-get install -y strace)")
		}
		t.Skip("strace not found (apt-get install -y strace); skipped outside CI")
	}
}

// steadyOf is a steady poll of the categories under prep as the dashboard
// asks it: runs.jsonl tailed (absent: the old script writes none), the
// records, errors (absent) and prompts counted from where they end.
func steadyOf(prep string, n int) *Batch {
	b := &Batch{}
	for i := 0; i < n; i++ {
		d := filepath.Join(prep, fmt.Sprintf("C%05d", i))
		b.Tail(NewTail(filepath.Join(d, "runs.jsonl")))
		for _, f := range []string{"raw_responses.jsonl", "errors.jsonl", "prompts.jsonl"} {
			c := NewCounter(filepath.Join(d, f))
			if fi, err := os.Stat(c.Path); err == nil {
				c.off = fi.Size()
				c.tail = make([]byte, min(overlapLen, c.off))
			}
			b.Count(c)
		}
	}
	b.Cat("/proc/stat", 100) // an op that runs every poll
	return b
}

// The shell agent's steady poll forks about as many processes for 1,000
// categories as for 50 (xargs' batches of names aside: one stat a 128 KB
// of them with GNU's, more with busybox's): what did not change costs a
// line of awk, not a process or a shell variable (a variable per op made a poll of N ops
// cost N²: 1,000 categories took 37 s a poll, 300 took 2.4 s). Its first
// request answers every file already at its offset without running an op.
func TestShellAgentForksDoNotGrowWithCategories(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	t.Parallel()
	needStrace(t)
	forks := map[int][2]int{}
	for _, n := range []int{50, 1000} {
		prep := manyCategories(t, n)
		log := filepath.Join(t.TempDir(), "strace")
		ag := &Agent{h: straced{log}}
		t.Cleanup(ag.Close)
		var per [2]int
		for round := range 3 {
			before := 0
			if round > 0 {
				before = forksIn(t, log)
			}
			a, err := ag.Run(context.Background(), steadyOf(prep, n))
			must(t, err)
			last := filepath.Join(prep, fmt.Sprintf("C%05d", n-1))
			if st := a.stats[filepath.Join(last, "prompts.jsonl")]; st.err != nil || st.fi.Size != 27 {
				t.Fatalf("%d categories, round %d: prompts %+v", n, round, st)
			}
			if st := a.stats[filepath.Join(last, "errors.jsonl")]; !errors.Is(st.err, errNotExist) {
				t.Fatalf("%d categories, round %d: errors.jsonl %+v, want gone", n, round, st)
			}
			if round > 0 {
				per[round-1] = forksIn(t, log) - before
			}
		}
		forks[n] = per
	}
	t.Logf("forks a steady poll (2nd, 3rd request): 50 categories %v, 1,000 %v", forks[50], forks[1000])
	for i := range 2 {
		if small, big := forks[50][i], forks[1000][i]; big > small+1000/50 {
			t.Errorf("request %d: %d forks for 1,000 categories against %d for 50: the shell's poll grows with them", i+2, big, small)
		}
	}
}

// An answer the shell agent made without running its op (the S record of
// a file at the op's offset) never stands for a later run's answer: a
// count from the file's start after it answers in full, as the one-shot
// does, though the op's kept answer from before is the same bytes. Under
// every awk a host may plan with, and the Go agent beside them.
func TestShellAgentMadeAnswerNeverStandsForARun(t *testing.T) {
	path := os.Getenv("PATH")
	for name, dir := range testawk.Dirs(t) {
		t.Run(name, func(t *testing.T) {
			t.Setenv("PATH", dir+string(os.PathListSeparator)+path)
			madeAnswers(t, NewAgent(Local{}))
		})
	}
	t.Run("go", func(t *testing.T) { madeAnswers(t, goAgent(t)) })
}

func madeAnswers(t *testing.T, ag *Agent) {
	t.Cleanup(ag.Close)
	dir := t.TempDir()
	f := filepath.Join(dir, "it's raw.jsonl")
	gone := filepath.Join(dir, "errors.jsonl")
	writeFile(t, f, strings.Repeat("{\"id\":1}\n", 100))
	for round, off := range []int64{0, 900, 0, 900, 900} {
		batch := func() *Batch {
			b := &Batch{}
			c := NewCounter(f)
			c.off = off
			if off > 0 {
				c.tail = make([]byte, min(overlapLen, off))
			}
			b.Count(c)
			b.Count(NewCounter(gone))
			b.Tail(NewTail(gone))
			return b
		}
		want := sameAsOneShot(t, ag, batch, round)
		if off == 0 && len(want.reads[f]) == 0 {
			t.Fatalf("round %d: the one-shot read nothing from the start", round)
		}
		if round == 2 {
			writeFile(t, gone, "{}\n") // made: it was gone; now it runs
		}
	}
}

// On a host whose xargs takes no -0 (or whose stat fails otherwise), the
// shell agent's one stat answers nothing: no file is then called gone, the
// ops run and answer as the one-shot does.
func TestShellAgentWithoutXargsZeroRunsItsOps(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "xargs"), "#!/bin/sh\necho \"xargs: invalid option -- '0'\" >&2\nexit 1\n")
	must(t, os.Chmod(filepath.Join(dir, "xargs"), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	madeAnswers(t, NewAgent(Local{}))
}
