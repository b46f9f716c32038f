package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// answersText renders answers in a fixed order, errors by their text.
func answersText(a *answers) string {
	var lines []string
	for p, s := range a.stats {
		lines = append(lines, fmt.Sprintf("S %q %d %d %v %v", p, s.fi.Size, s.fi.ModTime.Unix(), s.fi.IsDir, s.err))
	}
	for p, rs := range a.reads {
		for _, r := range rs {
			lines = append(lines, fmt.Sprintf("R %q %d %v %q %v", p, r.off, r.eof, r.data, r.err))
		}
	}
	for p, g := range a.globs {
		lines = append(lines, fmt.Sprintf("G %q %q %v", p, g.paths, g.err))
	}
	for p, c := range a.counts {
		lines = append(lines, fmt.Sprintf("N %q %+v", p, c))
	}
	for p, x := range a.execs {
		lines = append(lines, fmt.Sprintf("X %q %q %q %d", p, x.Stdout, x.Stderr, x.ExitCode))
	}
	for p, l := range a.links {
		lines = append(lines, fmt.Sprintf("L %q %q %v", p, l.target, l.err))
	}
	for p, l := range a.real {
		lines = append(lines, fmt.Sprintf("P %q %q %v", p, l.target, l.err))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// sameAsOneShot runs a batch through the one-shot script and through ag,
// fails unless both answer alike, and returns the one-shot's answers.
func sameAsOneShot(t *testing.T, ag *Agent, batch func() *Batch, round int) *answers {
	t.Helper()
	ctx := context.Background()
	b := batch()
	res, err := Local{}.Exec(ctx, b.Argv()...)
	must(t, err)
	want, err := parseBatchOf(res.Stdout, b, nil)
	must(t, err)
	got, err := ag.Run(ctx, batch())
	if err != nil {
		t.Fatalf("round %d: %v", round, err)
	}
	if g, w := answersText(got), answersText(want); g != w {
		t.Fatalf("round %d: the agent's answers differ from the one-shot's:\n--- agent\n%s\n--- one-shot\n%s", round, g, w)
	}
	return want
}

// The agent answers a batch as the one-shot script does, on names that
// mean something to sh (spaces, quotes, $, a backslash, a newline, a
// leading dash, glob characters), on the first request and on later ones,
// where unchanged answers come back by name and changed ones in full.
func TestAgentAnswersLikeTheOneShot(t *testing.T) {
	dir := t.TempDir()
	prep := filepath.Join(dir, "prepared")
	names := []string{"B1", "with space", `it's "quoted"`, "-dash", `$HOME`, `back\slash`, "new\nline", "star*[x]?", "ünï"}
	for i, n := range names {
		d := filepath.Join(prep, n)
		must(t, os.MkdirAll(d, 0o755))
		writeFile(t, filepath.Join(d, "raw.jsonl"), strings.Repeat("{\"id\":1}\n", 10*(i+1)))
	}
	log := filepath.Join(dir, "log")
	writeFile(t, log, strings.Repeat("line\n", 3000))
	big := filepath.Join(prep, "B1", "big.jsonl")
	writeFile(t, big, strings.Repeat(`{"id":"x","content":"yyyyyyyy"}`+"\n", 20000))
	batch := func() *Batch {
		b := &Batch{}
		b.Glob(filepath.Join(prep, "*", "raw.jsonl"), prep, "raw.jsonl")
		tl := NewTail(log)
		tl.StartBack = 1000
		b.Tail(tl)
		cb := NewCounter(big)
		cb.RemoteAbove = 100
		b.Count(cb)
		cs := NewCounter(filepath.Join(prep, `it's "quoted"`, "raw.jsonl"))
		cs.RemoteAbove = 10
		b.CountThen(cs, 0, "sh", "-c", `tail -c +"$2" -- "$1" | head -c "$3" | wc -l; echo "$# $2 $3"`, "synthwatch-sum")
		for _, n := range names {
			b.Count(NewCounter(filepath.Join(prep, n, "raw.jsonl")))
		}
		b.Count(NewCounter(filepath.Join(prep, "B1", "gone.jsonl")))
		b.Cat(filepath.Join(dir, "nope"), 100)
		b.Cat(log, 50)
		b.Exec("sh", "-c", `echo "out $1"; echo err >&2; exit 3`, "x", "a b\nc")
		b.RealPath(dir)
		b.Each(prep, []*Tail{NewTail("raw.jsonl")}, []*Counter{NewCounter("raw.jsonl")})
		return b
	}
	ag := NewAgent(Local{})
	t.Cleanup(ag.Close)
	for round := 0; round < 4; round++ {
		want := sameAsOneShot(t, ag, batch, round)
		if !strings.Contains(answersText(want), "X \"sh -c 'tail") {
			t.Fatalf("round %d: the count on the host ran no sum", round)
		}
		switch round { // the host changes between rounds (round 1: nothing)
		case 1:
			appendFile(t, filepath.Join(prep, "with space", "raw.jsonl"), "{\"id\":2}\n")
			appendFile(t, log, "more\n")
		case 2:
			must(t, os.Remove(filepath.Join(prep, "-dash", "raw.jsonl")))
			writeFile(t, filepath.Join(prep, "B1", "gone.jsonl"), "{}\n")
		}
	}
	if starts, reqs := ag.Stats(); starts != 1 || reqs != 4 {
		t.Errorf("starts %d requests %d: one agent answers every request", starts, reqs)
	}
}

// A request whose answers did not change costs a line per op.
func TestAgentSendsOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	var ops []*Counter
	for i := 0; i < 20; i++ {
		p := filepath.Join(dir, fmt.Sprintf("a long directory name for file %d", i), "raw_responses.jsonl")
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		writeFile(t, p, strings.Repeat("{\"id\":1}\n", 100))
		ops = append(ops, NewCounter(p))
	}
	ag := NewAgent(Local{})
	t.Cleanup(ag.Close)
	sizes, answers := []int{}, []int{}
	for i := 0; i < 2; i++ {
		b := &Batch{}
		for _, c := range ops {
			b.Count(c)
		}
		if _, err := ag.Run(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		sizes, answers = append(sizes, ag.lastReq), append(answers, ag.lastAns)
	}
	if sizes[1] >= sizes[0]/2 {
		t.Errorf("request sizes %v: the paths go once", sizes)
	}
	if answers[1] > 20*len("@= 19\n")+len("@E ~sw00000000000000000000000000000000\n") {
		t.Errorf("answer sizes %v: an unchanged answer is named, not sent", answers)
	}
	t.Logf("20 idle counts: request %v B, answer %v B", sizes, answers)
}

// A host whose agent cannot start is said once per session, and the
// error names why.
func TestAgentWithoutStatC(t *testing.T) {
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "stat"), "#!/bin/sh\nexit 1\n")
	must(t, os.Chmod(filepath.Join(bin, "stat"), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	ag := NewAgent(Local{})
	t.Cleanup(ag.Close)
	b := &Batch{}
	b.Cat("/etc/hostname", 100)
	_, err := ag.Run(context.Background(), b)
	if !errors.Is(err, ErrNoAgent) || !strings.Contains(err.Error(), "no stat -c") {
		t.Fatalf("err %v", err)
	}
	if ag.Usable() {
		t.Error("still usable on the same session")
	}
}

// agentProcs lists the host's processes running the agent with nonce.
func agentProcs(nonce string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), nonce) {
			out = append(out, e.Name())
		}
	}
	return out
}

// Over a real sshd: one agent per link session. A dropped link ends its
// shell (nothing is left running on the host), and the next request starts
// one on the new session; closing the host ends it too.
func TestAgentLivesWithTheLink(t *testing.T) {
	s := sshdtest.Start(t)
	h := dial(t, opts(t, s))
	ag := NewAgent(h)
	dir := t.TempDir()
	f := filepath.Join(dir, "raw.jsonl")
	writeFile(t, f, strings.Repeat("{\"id\":1}\n", 100))
	ask := func() {
		t.Helper()
		b := &Batch{}
		b.Count(NewCounter(f))
		a, err := ag.Run(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if st := a.stats[f]; st.err != nil || st.fi.Size != 900 {
			t.Fatalf("stat %+v", st)
		}
	}
	ask()
	first := ag.nonce
	if len(agentProcs(first)) == 0 {
		t.Fatal("no agent on the host after a request")
	}
	ask()
	sess := h.State().Sessions
	h.ReconnectNow() // the link drops: its channels with it
	waitGone(t, first)
	for h.State().Phase != Connected || h.State().Sessions == sess {
		time.Sleep(20 * time.Millisecond)
	}
	ask()
	if starts, reqs := ag.Stats(); starts != 2 || reqs != 3 {
		t.Errorf("starts %d requests %d: a new agent on the new session", starts, reqs)
	}
	second := ag.nonce
	h.Close()
	waitGone(t, second)
}

func waitGone(t *testing.T, nonce string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // bounds a hang; measures nothing
	for len(agentProcs(nonce)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the agent outlived its link: %v", agentProcs(nonce))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Counts and tails asked from their files' ends answer from one stat when
// the files did not change (no op of their own runs), and exactly as the
// one-shot does through growth, deletion, creation, a new mtime and a
// rewrite to the same size and mtime.
func TestAgentIdleFilesAnswerAsTheyDid(t *testing.T) {
	dir := t.TempDir()
	names := []string{"grows", "idle", "deleted", "touched", "created", "rewritten"}
	p := func(n string) string { return filepath.Join(dir, n+" file.jsonl") }
	for _, n := range names[:4] {
		writeFile(t, p(n), strings.Repeat("{\"id\":1}\n", 50))
	}
	writeFile(t, p("rewritten"), strings.Repeat("{\"id\":1}\n", 50))
	ag := NewAgent(Local{})
	t.Cleanup(ag.Close)
	size := map[string]int64{}
	for round := 0; round < 6; round++ {
		batch := func() *Batch {
			b := &Batch{}
			for _, n := range names {
				c := NewCounter(p(n))
				c.off = size[n]
				if c.off > 0 {
					c.tail = make([]byte, min(overlapLen, c.off))
				}
				b.Count(c)
				tl := NewTail(p(n))
				tl.attached, tl.off = true, size[n]
				b.Tail(tl)
			}
			return b
		}
		want := sameAsOneShot(t, ag, batch, round)
		for _, n := range names {
			size[n] = want.stats[p(n)].fi.Size
		}
		switch round {
		case 1:
			appendFile(t, p("grows"), "{\"id\":2}\n")
			must(t, os.Remove(p("deleted")))
			writeFile(t, p("created"), "{}\n")
			later := time.Now().Add(time.Hour)
			must(t, os.Chtimes(p("touched"), later, later))
		case 3:
			fi, err := os.Stat(p("rewritten"))
			must(t, err)
			writeFile(t, p("rewritten"), strings.Repeat("{\"id\":9}\n", 50))
			must(t, os.Chtimes(p("rewritten"), fi.ModTime(), fi.ModTime()))
		}
	}
}

// Warm starts the agent ahead of the first request, which then finds it
// running; on a host that cannot run it, Warm finds that out.
func TestAgentWarm(t *testing.T) {
	ag := NewAgent(Local{})
	t.Cleanup(ag.Close)
	ag.Warm(context.Background())
	ag.Warm(context.Background()) // running already: nothing
	b := &Batch{}
	b.Cat("/proc/stat", 100)
	a, err := ag.Run(context.Background(), b)
	if err != nil || len(a.reads["/proc/stat"]) == 0 {
		t.Fatalf("after Warm: %v", err)
	}
	if starts, reqs := ag.Stats(); starts != 1 || reqs != 1 {
		t.Errorf("starts %d requests %d", starts, reqs)
	}

	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "stat"), "#!/bin/sh\nexit 1\n")
	must(t, os.Chmod(filepath.Join(bin, "stat"), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	no := NewAgent(Local{})
	t.Cleanup(no.Close)
	no.Warm(context.Background())
	if no.Usable() {
		t.Error("usable after a Warm on a host without stat -c")
	}
}
