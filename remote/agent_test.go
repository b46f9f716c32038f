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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// answersText renders answers in a fixed order; a failure by its kind
// alone (noent or err), since its words are the tool's own (head's, dash's
// with its $0, Go's).
func answersText(a *answers) string {
	var lines []string
	for p, s := range a.stats {
		lines = append(lines, fmt.Sprintf("S %q %d %d %v %v", p, s.fi.Size, s.fi.ModTime.Unix(), s.fi.IsDir, errKind(s.err)))
	}
	for p, rs := range a.reads {
		for _, r := range rs {
			if r.err != nil {
				r.data = nil
			}
			lines = append(lines, fmt.Sprintf("R %q %d %v %q %v", p, r.off, r.eof, r.data, errKind(r.err)))
		}
	}
	for p, g := range a.globs {
		lines = append(lines, fmt.Sprintf("G %q %q %v", p, g.paths, errKind(g.err)))
	}
	for p, c := range a.counts {
		if c.err != "" {
			c.err = "err"
		}
		lines = append(lines, fmt.Sprintf("N %q %+v", p, c))
	}
	for p, x := range a.execs {
		lines = append(lines, fmt.Sprintf("X %q %q %q %d", p, x.Stdout, x.Stderr, x.ExitCode))
	}
	for p, l := range a.links {
		lines = append(lines, fmt.Sprintf("L %q %q %v", p, l.target, errKind(l.err)))
	}
	for p, l := range a.real {
		if l.err != nil {
			l.target = ""
		}
		lines = append(lines, fmt.Sprintf("P %q %q %v", p, l.target, errKind(l.err)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func errKind(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errNotExist):
		return "noent"
	}
	return "err"
}

// sleeper starts sh -c script with args, sleeping, and returns its pid.
func sleeper(t *testing.T, script string, args ...string) int {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", script, "sleeper"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its sleep ends with it
	must(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) { // its redirection done and sleep started
		if kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid)); len(kids) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd.Process.Pid
}

// onlyIn is a's lines that b lacks.
func onlyIn(a, b string) string {
	in := map[string]bool{}
	for _, l := range strings.Split(b, "\n") {
		in[l] = true
	}
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !in[l] {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
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
		t.Fatalf("round %d: the agent's answers differ from the one-shot's:\n--- only the agent's\n%s\n--- only the one-shot's\n%s", round, onlyIn(g, w), onlyIn(w, g))
	}
	return want
}

// The agent answers a batch as the one-shot script does, on names that
// mean something to sh (spaces, quotes, $, a backslash, a newline, a
// leading dash, glob characters), on the first request and on later ones,
// where unchanged answers come back by name and changed ones in full.
func TestAgentAnswersLikeTheOneShot(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	for _, kind := range []string{"go"} {
		t.Run(kind, func(t *testing.T) {
			ag := both(t)[kind]
			dir := t.TempDir()
			prep := filepath.Join(dir, "prepared")
			names := []string{"B1", "with space", `it's "quoted"`, "-dash", `$HOME`, `back\slash`, "new\nline", "star*[x]?", "ünï",
				"a", "a b", "a.b", "ab"} // the glob sorts NAME/: "a b/" before "a/"
			for i, n := range names {
				d := filepath.Join(prep, n)
				must(t, os.MkdirAll(d, 0o755))
				writeFile(t, filepath.Join(d, "raw.jsonl"), strings.Repeat("{\"id\":1}\n", 10*(i+1)))
			}
			log := filepath.Join(dir, "log")
			writeFile(t, log, strings.Repeat("line\n", 3000))
			for _, hidden := range []string{".hidden", "..dots", ".-dash"} { // sh's globs list these after the rest, apart
				must(t, os.MkdirAll(filepath.Join(prep, hidden), 0o755))
				writeFile(t, filepath.Join(prep, hidden, "raw.jsonl"), "{\"id\":1}\n")
			}
			link := filepath.Join(dir, "link")
			must(t, os.Symlink(prep, link))
			// a category whose records are a link to a disk not mounted: an
			// error to both, not a file that is gone to one of them
			must(t, os.MkdirAll(filepath.Join(prep, "unmounted"), 0o755))
			dangling := filepath.Join(prep, "unmounted", "raw.jsonl")
			must(t, os.Symlink(filepath.Join(dir, "scratch", "raw.jsonl"), dangling))
			// processes as a host has them: one that holds a file open for
			// writing, one whose command line says worker (both sleep, so
			// their /proc/PID/stat holds still between the two reads)
			held := filepath.Join(dir, "held.log")
			writeFile(t, held, "")
			holder := sleeper(t, "exec 3>>\"$1\"; sleep 600; :", held)
			reader := sleeper(t, "exec 3<\"$1\"; sleep 600; :", held) // a tail -f: no writer, not read
			notWorker := filepath.Join(dir, "not-worker.json")
			writeFile(t, notWorker, fmt.Sprintf(`{"state": "running", "pid": %d, "args": ["x"]}`, holder))
			worker := filepath.Join(dir, "worker.json")
			workerPid := sleeper(t, "sleep 600; :", "worker")
			writeFile(t, worker, fmt.Sprintf("{\n  \"pid\":%d\n}", workerPid))
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
				b.Count(NewCounter(dangling))
				b.Tail(NewTail(dangling))
				b.Cat(dangling, 100)
				b.Cat(filepath.Join(dir, "nope"), 100)
				b.Cat(log, 50)
				b.Exec("sh", "-c", `echo "out $1"; echo err >&2; exit 3`, "x", "a b\nc")
				b.RealPath(dir)
				b.RealPath(link)
				b.RealPath(log) // a file: cd fails on it
				b.RealPath(filepath.Join(dir, "nope"))
				b.Each(prep, []*Tail{NewTail("raw.jsonl")}, []*Counter{NewCounter("raw.jsonl")})
				b.Procs(notWorker, HoldersArgv([]string{GlobEscape(held)}))
				b.Procs(worker, HoldersArgv([]string{GlobEscape(held)}))
				b.Procs(filepath.Join(dir, "no-state.json"), HoldersArgv([]string{GlobEscape(held)}))
				return b
			}
			for round := 0; round < 4; round++ {
				want := sameAsOneShot(t, ag, batch, round)
				if !strings.Contains(answersText(want), "X \"sh -c 'tail") {
					t.Fatalf("round %d: the count on the host ran no sum", round)
				}
				if _, ok := want.links[fmt.Sprintf("/proc/%d/cwd", holder)]; !ok || len(want.reads[fmt.Sprintf("/proc/%d/cmdline", workerPid)]) == 0 {
					t.Fatalf("round %d: the procs ops read neither the holder the scan found nor the worker", round)
				}
				if _, ok := want.reads[fmt.Sprintf("/proc/%d/cmdline", reader)]; ok {
					t.Fatalf("round %d: the procs ops read a process that only reads the file", round)
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
		})
	}
}

// A request whose answers did not change costs a line per op.
func TestAgentSendsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ops []*Counter
	for i := 0; i < 20; i++ {
		p := filepath.Join(dir, fmt.Sprintf("a long directory name for file %d", i), "raw_responses.jsonl")
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		writeFile(t, p, strings.Repeat("{\"id\":1}\n", 100))
		ops = append(ops, NewCounter(p))
	}
	ag := NewAgent(Local{})
	ag.UseBinary(selfAsBinary(t))
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
	// 20 numbered calls; a path alone is 60 bytes (the first request is deflated)
	if sizes[1] >= sizes[0] || sizes[1] > 20*20 {
		t.Errorf("request sizes %v: the paths go once", sizes)
	}
	if answers[1] > 20*(len("@= 19\n")+8) {
		t.Errorf("answer sizes %v: an unchanged answer is named, not sent", answers)
	}
	t.Logf("20 idle counts: request %v B, answer %v B", sizes, answers)
}

// A batch of one op after a poll of thousands of files (a sum the
// pipeline asks after the poll's answer: Watcher.hostFor) does not restart
// the agent: the aliases the poll named stand for the poll after it, and
// the agent's last answers with them.
func TestAgentFollowUpKeepsThePollsAliases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ops []*Counter
	for i := 0; i < maxAliases+200; i++ {
		p := filepath.Join(dir, fmt.Sprintf("raw_%d.jsonl", i))
		writeFile(t, p, "{\"id\":1}\n")
		ops = append(ops, NewCounter(p))
	}
	ag := NewAgent(Local{})
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	poll := func() {
		b := &Batch{}
		for _, c := range ops {
			b.Count(c)
		}
		if _, err := ag.Run(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	poll()
	if n := len(ag.alias); n <= aliasBound(1) {
		t.Fatalf("%d aliases after the poll: not past a one-op request's bound (%d), the case under test", n, aliasBound(1))
	}
	one := &Batch{}
	x := one.Exec("sh", "-c", "echo one")
	if _, err := ag.Run(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	if r, ok := x.Result(); !ok || strings.TrimSpace(string(r.Stdout)) != "one" {
		t.Fatalf("the follow-up's answer: %+v %v", r, ok)
	}
	poll()
	if starts, reqs := ag.Stats(); starts != 1 || reqs != 3 {
		t.Fatalf("%d starts for %d requests: the follow-up restarted the agent", starts, reqs)
	}
}

// A host whose stat has no -c (neither GNU's nor busybox's): the
// fallback says so, with its own words, and reads nothing it cannot
// prove (its records need stat -c).
func TestFallbackWithoutStatC(t *testing.T) {
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "stat"), "#!/bin/sh\nexit 1\n")
	must(t, os.Chmod(filepath.Join(bin, "stat"), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	b := &Batch{}
	b.Cat("/etc/hostname", 100)
	err := NewFallback(Local{}).Run(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), "no stat -c") {
		t.Fatalf("err %v", err)
	}
}

// Over a real sshd: a command that says why on stderr as it ends has said
// it by the time its stream is closed, every time (an agent that cannot run
// is reported with its own words, not "it exited at once").
func TestStreamKeepsWhatItsCommandSaidAsItEnded(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	h := dial(t, opts(t, s))
	for i := 0; i < 30; i++ {
		errb := &lastBytes{max: 2048}
		st, err := h.Stream(context.Background(), errb, "sh", "-c", "echo 'synthwatch-batch: no stat -c here' >&2; exit 72")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(st); err != nil {
			t.Fatalf("read: %v", err)
		}
		st.Close()
		if got := errb.String(); got != "synthwatch-batch: no stat -c here\n" {
			t.Fatalf("run %d: stderr %q once closed", i, got)
		}
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
	t.Parallel()
	s := sshdtest.Start(t)
	h := dial(t, opts(t, s))
	ag := NewAgent(h)
	ag.UseBinary(selfAsBinary(t))
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
	t.Parallel()
	for _, kind := range []string{"go"} {
		t.Run(kind, func(t *testing.T) {
			ag := both(t)[kind]
			dir := t.TempDir()
			names := []string{"grows", "idle", "deleted", "touched", "created", "rewritten"}
			p := func(n string) string { return filepath.Join(dir, n+" file.jsonl") }
			for _, n := range names[:4] {
				writeFile(t, p(n), strings.Repeat("{\"id\":1}\n", 50))
			}
			writeFile(t, p("rewritten"), strings.Repeat("{\"id\":1}\n", 50))
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
		})
	}
}
