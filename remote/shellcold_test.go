package remote

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testawk"
)

// procTraced runs the agent under strace -ff, a log per process: the
// successful execs and the forks of everything it starts.
type procTraced struct{ prefix string }

func (s procTraced) Stream(ctx context.Context, stderr io.Writer, argv ...string) (Stream, error) {
	a := append([]string{"strace", "-ff", "-qq", "--seccomp-bpf", "-z", "-e", "trace=execve,fork,vfork,clone,clone3", "-o", s.prefix}, argv...)
	return Local{}.Stream(ctx, stderr, a...)
}

var execLine = regexp.MustCompile(`(?m)^execve\(`)

// procsIn counts the execs and the forks (threads aside) in the logs.
func procsIn(t *testing.T, prefix string) (execs, forks int) {
	t.Helper()
	logs, err := filepath.Glob(prefix + ".*")
	must(t, err)
	for _, l := range logs {
		b, err := os.ReadFile(l)
		must(t, err)
		execs += len(execLine.FindAll(b, -1))
		for _, m := range regexp.MustCompile(`(?m)^(clone3?|v?fork)\(.*$`).FindAll(b, -1) {
			if !strings.Contains(string(m), "CLONE_THREAD") {
				forks++
			}
		}
	}
	return execs, forks
}

// The shell agent's cold request starts no program per op for the
// agent's own work: its answers are measured by one stat, joined by one
// cat and kept by one mv, and an op's scratch files need no dir made.
// What an op reads itself is its own (a glob of an empty folder reads
// nothing): 100 such ops exec as many programs as 10 (but the few that
// take a request too long for the command line from stdin), and fork one
// subshell each (they run at once). It was 4 programs an op (mkdir, wc,
// cat, mv): a cold status of 14 ops forked 233 processes on the host.
func TestShellAgentColdRequestProcsDoNotGrowWithOps(t *testing.T) {
	t.Parallel()
	needStrace(t)
	root := t.TempDir()
	count := func(n int) (execs, forks int) {
		b := &Batch{}
		var dirs []string
		for i := range n {
			d := filepath.Join(root, fmt.Sprintf("c%03d", i))
			must(t, os.MkdirAll(d, 0o755))
			dirs = append(dirs, d)
			b.Glob(d+"/*/prompts.jsonl", d, "prompts.jsonl")
		}
		prefix := filepath.Join(t.TempDir(), "strace")
		ag := &Agent{h: procTraced{prefix}}
		a, err := ag.Run(context.Background(), b)
		must(t, err)
		ag.Close()
		for _, d := range dirs {
			if g, ok := a.globs[d+"/*/prompts.jsonl"]; !ok || g.err != nil || len(g.paths) != 0 {
				t.Fatalf("%d ops: glob of %s: %+v (answered %v)", n, d, g, ok)
			}
		}
		return procsIn(t, prefix)
	}
	e10, f10 := count(10)
	e100, f100 := count(100)
	t.Logf("a cold request: 10 ops %d execs, %d forks; 100 ops %d execs, %d forks", e10, f10, e100, f100)
	if e100 > e10+5 {
		t.Errorf("100 ops exec %d programs against %d for 10: the agent's own work grows with the ops", e100, e10)
	}
	if f100 > f10+90+5 {
		t.Errorf("100 ops fork %d processes against %d for 10: more than the op's own subshell each", f100, f10)
	}
}

// The shell agent run from the user's cache answers its first request
// from the command line, then skips the script on stdin: exactly, though
// the next request is behind it already (a client quick to ask again, a
// slow host). busybox's head -c reads a buffer, not the bytes asked: the
// next request was skipped with the script, and the agent hung.
func TestShellAgentFromCacheKeepsTheRequestBehindTheScript(t *testing.T) {
	t.Parallel()
	dirs := awkAndBusybox(t)
	dirs["no dd"] = noDDPath(t)
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "agent.sh")
			writeFile(t, script, agentScript)
			a := &Agent{alias: map[string]int{}, keys: map[string]int{}, outs: map[int][]byte{}}
			first, second := &Batch{nonce: "~n"}, &Batch{nonce: "~n"}
			first.Cat("/proc/loadavg", 100)
			second.Cat("/proc/uptime", 100)
			req1, req2 := a.encode(first), a.encode(second)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", script, "~n", string(req1), strconv.Itoa(len(agentScript)))
			path := dir + string(os.PathListSeparator) + os.Getenv("PATH")
			if name == "no dd" {
				path = dir
			}
			cmd.Env = append(os.Environ(), "PATH="+path)
			// the script and the next request wait on stdin before the agent starts
			cmd.Stdin = io.MultiReader(strings.NewReader(agentScript+string(req2)), &blockUntil{ctx})
			out := &lastBytes{max: 1 << 20}
			cmd.Stdout = out
			must(t, cmd.Start())
			for strings.Count(out.String(), "@E ~n\n") < 2 && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			cmd.Wait()
			// the second answer is op 1's, /proc/uptime
			if n := strings.Count(out.String(), "@E ~n\n"); n != 2 || !strings.Contains(out.String(), "@O 1 ") {
				t.Fatalf("%d answers of 2, the second request lost:\n%s", n, out.String())
			}
		})
	}
}

// blockUntil is a stdin that stays open until ctx ends.
type blockUntil struct{ ctx context.Context }

func (b *blockUntil) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, io.EOF
}

// A launcher with no copy in the cache reads the script from stdin and
// keeps it: the first request, when it did not fit on the command line,
// waits behind the script there. busybox's head -c reads a buffer, not
// the bytes asked: it took the request with the script (the agent hung)
// and kept both as the cached script.
func TestShellAgentFromStdinKeepsTheRequestBehindTheScript(t *testing.T) {
	t.Parallel()
	dirs := awkAndBusybox(t)
	noDD := noDDPath(t)
	dirs["no dd"] = noDD
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			cache := t.TempDir()
			a := &Agent{alias: map[string]int{}, keys: map[string]int{}, outs: map[int][]byte{}}
			first := &Batch{nonce: "~n"}
			first.Cat("/proc/loadavg", 100)
			req := a.encode(first)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// no request on the line: the script and the request wait on stdin before the agent starts
			path := dir + string(os.PathListSeparator) + os.Getenv("PATH")
			if dir == noDD {
				path = noDD
			}
			cmd := exec.CommandContext(ctx, filepath.Join(noDD, "sh"), "-c", agentShell, "synthwatch-agent", "~n", "", AgentProto, strconv.Itoa(len(agentScript)), "", agentScriptHash)
			cmd.Env = append(os.Environ(), "PATH="+path, "XDG_CACHE_HOME="+cache)
			cmd.Stdin = io.MultiReader(strings.NewReader(agentScript+string(req)), &blockUntil{ctx})
			out := &lastBytes{max: 1 << 20}
			cmd.Stdout = out
			must(t, cmd.Start())
			for !strings.Contains(out.String(), "@E ~n\n") && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			cmd.Wait()
			if !strings.Contains(out.String(), "@O 0 ") || !strings.Contains(out.String(), "@E ~n\n") {
				t.Fatalf("no answer, the request behind the script lost:\n%s", out.String())
			}
			kept, err := os.ReadFile(filepath.Join(cache, "synthwatch", "synthwatch-agent-"+agentScriptHash+".sh"))
			must(t, err)
			if string(kept) != agentScript {
				t.Fatalf("the cached script is %d bytes, not the script's %d", len(kept), len(agentScript))
			}
		})
	}
}

// noDDPath is a PATH of this machine's tools the shell agent uses, but
// dd: a host without it.
func noDDPath(t *testing.T) string {
	dir := t.TempDir()
	for _, c := range []string{"sh", "awk", "head", "tail", "stat", "xargs", "cat", "cmp", "wc", "mv", "mkdir", "mktemp", "rm", "timeout", "tr"} {
		p, err := exec.LookPath(c)
		must(t, err)
		must(t, os.Symlink(p, filepath.Join(dir, c)))
	}
	return dir
}

// awkAndBusybox is testawk.Dirs's machine awk and busybox: without
// busybox the test goes on (CI fails without it).
func awkAndBusybox(t *testing.T) map[string]string {
	all, out := testawk.Dirs(t), map[string]string{}
	for _, name := range []string{"awk", "busybox"} {
		if d, ok := all[name]; ok {
			out[name] = d
		} else if os.Getenv("CI") == "true" {
			t.Fatalf("no %s here", name)
		}
	}
	return out
}
