package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"golang.org/x/crypto/ssh/knownhosts"
)

// followRoot is a root with one category, B1, of 100000 prompts and no
// records yet, and a writer that appends a record to its
// raw_responses.jsonl every 50 ms until the test ends.
func followRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B1")
	os.MkdirAll(dir, 0o755)
	var p strings.Builder
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&p, `{"id":%d,"messages":[{"role":"user","content":"q"}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte("[classes.SHORT]\nconcurrency = 8\n[[categories]]\nname = \"B1\"\nclass = \"SHORT\"\n"), 0o644)
	f, err := os.OpenFile(filepath.Join(dir, "raw_responses.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer f.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			fmt.Fprintf(f, `{"id":%d,"category":"B1","completion_tokens":200,"finish_reason":"stop","content":"ok"}`+"\n", i)
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
	return root
}

// follower is a running `synthwatch status --follow --json`, read line by line.
type follower struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines chan []byte
	rest  chan []byte // what followed the last newline, at EOF
	snaps []snapshot.Snapshot
}

func startFollower(t *testing.T, args ...string) *follower {
	t.Helper()
	state := t.TempDir()
	cmd := exec.Command(testbin.Path(t), append([]string{"status", "--follow", "--json"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+state, "XDG_STATE_HOME="+state, "SSH_AUTH_SOCK=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &follower{t: t, cmd: cmd, lines: make(chan []byte, 1000), rest: make(chan []byte, 1)}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			l, err := r.ReadBytes('\n')
			if err != nil {
				f.rest <- l
				close(f.lines)
				return
			}
			f.lines <- l
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("stderr of status --follow:\n%s", stderr.String())
		}
	})
	return f
}

// next reads one line: it must be one whole Snapshot, compact, later than
// the one before.
func (f *follower) next(d time.Duration) snapshot.Snapshot {
	f.t.Helper()
	var l []byte
	select {
	case l = <-f.lines:
	case <-time.After(d):
		f.t.Fatalf("no line from status --follow within %s (after %d)", d, len(f.snaps))
	}
	if l == nil {
		f.t.Fatalf("status --follow ended after %d lines", len(f.snaps))
	}
	return f.parse(l)
}

func (f *follower) parse(l []byte) snapshot.Snapshot {
	f.t.Helper()
	if !bytes.HasPrefix(l, []byte(`{"schema":1,`)) {
		f.t.Fatalf("line %d is not a compact Snapshot: %.200s", len(f.snaps)+1, l)
	}
	var s snapshot.Snapshot
	dec := json.NewDecoder(bytes.NewReader(l))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		f.t.Fatalf("line %d: %v: %.200s", len(f.snaps)+1, err, l)
	}
	if n := len(f.snaps); n > 0 && !s.Time.After(f.snaps[n-1].Time) {
		f.t.Fatalf("line %d: time %s is not after %s", n+1, s.Time, f.snaps[n-1].Time)
	}
	f.snaps = append(f.snaps, s)
	return s
}

// stop sends sig and wants exit 0 with every line whole.
func (f *follower) stop(sig syscall.Signal) {
	f.t.Helper()
	start := time.Now()
	f.cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- f.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second): // generous: the machine may be loaded
		f.t.Fatalf("status --follow still running 30 s after %v", sig)
	}
	f.t.Logf("exit after %v took %s", sig, time.Since(start).Round(time.Millisecond))
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		f.t.Fatalf("after %v: %v (want exit 0)", sig, err)
	} else if err != nil {
		f.t.Fatal(err)
	}
	for l := range f.lines {
		f.parse(l) // lines written before the signal must still be whole
	}
	if rest := <-f.rest; len(rest) != 0 {
		f.t.Fatalf("a line cut short by %v: %.200q", sig, rest)
	}
}

func doneOf(t *testing.T, s snapshot.Snapshot) int64 {
	t.Helper()
	for _, c := range s.Categories {
		if c.Name == "B1" {
			return c.Done
		}
	}
	t.Fatalf("no B1 in the snapshot at %s: %+v", s.Time, s.Categories)
	return 0
}

// status --follow --json over a real sshd, through a proxy that resets the
// link once: a line a poll, time and counts rising, the reset survived on
// the same process, SIGINT ends it with 0.
func TestFollowJSONOverSSH(t *testing.T) {
	testgate.E2E(t)
	s := sshdtest.Start(t)
	px, err := faultproxy.Start(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	kh := filepath.Join(t.TempDir(), "kh")
	os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(px.Addr())}, s.HostKey)+"\n"), 0o600)
	root := followRoot(t)
	f := startFollower(t, "--poll", "300ms", "-i", s.KeyPath, "-o", "UserKnownHostsFile="+kh, "-o", "StrictHostKeyChecking=yes",
		"-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=2", "-o", "ConnectTimeout=3", "--root", root, s.User+"@"+px.Addr())

	first := f.next(60 * time.Second)
	if first.Connection.State != "connected" || first.Host != s.User+"@"+px.Addr() || first.Root != root {
		t.Fatalf("first snapshot: connection %q host %q root %q", first.Connection.State, first.Host, first.Root)
	}
	var last snapshot.Snapshot
	for i := 0; i < 2 || doneOf(t, last) <= doneOf(t, first); i++ {
		last = f.next(30 * time.Second)
	}
	t.Logf("%d snapshots: done %d -> %d in %s", len(f.snaps), doneOf(t, first), doneOf(t, last), last.Time.Sub(first.Time).Round(time.Millisecond))

	// transient drops: the same process goes on, over the link it redials.
	// A reset is noticed at once and redialled; a black hole is noticed by
	// the keepalives, and until the link is back the lines are stale.
	before := doneOf(t, last)
	px.Reset()
	resetAt := time.Now()
	for {
		s := f.next(60 * time.Second)
		if s.Connection.State == "connected" && s.Connection.Drops >= 1 && doneOf(t, s) > before {
			before = doneOf(t, s)
			break
		}
	}
	t.Logf("after the reset: counting again after %s", time.Since(resetAt).Round(time.Millisecond))
	px.SetMode(faultproxy.BlackHole)
	holeAt := time.Now()
	for {
		s := f.next(60 * time.Second)
		if s.Connection.State != "connected" {
			if len(s.Categories) != 1 || s.Categories[0].State != snapshot.StateUnknown || s.Worker.State != snapshot.WorkerUnknown {
				t.Fatalf("a snapshot with the link %s is not stale: worker %s, categories %+v", s.Connection.State, s.Worker.State, s.Categories)
			}
			break
		}
	}
	t.Logf("black hole: stale after %s", time.Since(holeAt).Round(time.Millisecond))
	px.SetMode(faultproxy.Forward)
	px.Reset() // the dials held by the black hole
	backAt := time.Now()
	for {
		s := f.next(60 * time.Second)
		if s.Connection.State == "connected" && s.Connection.Drops >= 2 && doneOf(t, s) > before {
			break
		}
	}
	t.Logf("back: counting again after %s", time.Since(backAt).Round(time.Millisecond))
	f.stop(syscall.SIGINT)
}

// The same on a local root: --local, SIGTERM; and --count N stops by itself.
func TestFollowJSONLocal(t *testing.T) {
	testgate.E2E(t)
	root := followRoot(t)
	f := startFollower(t, "--poll", "200ms", "--local", root)
	first := f.next(30 * time.Second)
	if first.Connection.State != "local" {
		t.Fatalf("connection %q", first.Connection.State)
	}
	var last snapshot.Snapshot
	for i := 0; i < 2 || doneOf(t, last) <= doneOf(t, first); i++ {
		last = f.next(30 * time.Second)
	}
	t.Logf("%d snapshots: done %d -> %d in %s", len(f.snaps), doneOf(t, first), doneOf(t, last), last.Time.Sub(first.Time).Round(time.Millisecond))
	f.stop(syscall.SIGTERM)

	out, err := exec.Command(testbin.Path(t), "status", "--follow", "--json", "--count", "3", "--poll", "100ms", "--local", root).Output()
	if err != nil {
		t.Fatalf("--count 3: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("--count 3 printed %d lines:\n%s", len(lines), out)
	}
}

// Without --json, --follow prints the table under a "---" line per poll.
func TestFollowTextCount(t *testing.T) {
	root := followRoot(t)
	out, code := execCLI(t, "status", "--follow", "--count", "2", "--poll", "100ms", "--local", root)
	if code != 0 || strings.Count(out, "\n--- ") != 1 || !strings.HasPrefix(out, "--- ") || strings.Count(out, "CATEGORY  CLASS") != 2 {
		t.Fatalf("code %d:\n%s", code, out)
	}
	if _, code := execCLI(t, "status", "--count", "2", "--local", root); code != exitUsage {
		t.Errorf("--count without --follow: code %d, want %d", code, exitUsage)
	}
}
