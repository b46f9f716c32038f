package remote

import (
	"context"
	"github.com/synthwatch/synthwatch/remote/agentproto"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/synthwatch/synthwatch/internal/testawk"
	"github.com/synthwatch/synthwatch/internal/testgate"
)

// hostileNames mean something to sh, printf, awk or the agent protocol.
var hostileNames = []string{"$(touch PWNED)", "`touch PWNED2`", `back\slash`, `%s%b%n%%`, `\0047`, `\0134x`, `\c`, "it's", `"dq"`,
	"new\nline", "\xff\xfe non-utf8", "-n", "-e", " lead", "trail ", "tab\there", "a  two  spaces", "=eq", "D 3 =x", "L 5", "R | 0", "#1", "%"}

// hostileNamesBatch reads, counts and tails a file in each hostile directory.
func hostileNamesBatch(dir string) func() *Batch {
	return func() *Batch {
		b := &Batch{}
		for _, n := range hostileNames {
			p := filepath.Join(dir, n, "raw.jsonl")
			b.Count(NewCounter(p))
			b.Tail(NewTail(p))
			b.Cat(p, 100)
		}
		b.Glob(filepath.Join(dir, "*", "raw.jsonl"), dir, "raw.jsonl")
		return b
	}
}

func hostileNamesTree(t *testing.T) string {
	dir := t.TempDir()
	for i, n := range hostileNames {
		must(t, os.MkdirAll(filepath.Join(dir, n), 0o755))
		writeFile(t, filepath.Join(dir, n, "raw.jsonl"), strings.Repeat("{\"id\":1}\n", i+1))
	}
	return dir
}

// The first request, on the command line, answers hostile names as the
// one-shot does under every shell and awk, and the Go agent; so do the
// next ones, on stdin.
func TestAgentFirstRequestHostileNames(t *testing.T) {
	testgate.E2E(t)
	path := os.Getenv("PATH")
	run := func(t *testing.T, ag *Agent) {
		dir := hostileNamesTree(t)
		cwd, _ := os.Getwd()
		for round := 0; round < 3; round++ {
			sameAsOneShot(t, ag, hostileNamesBatch(dir), round)
			if round == 0 {
				ag.mu.Lock()
				n := ag.lastReq
				ag.mu.Unlock()
				if n == 0 || n > MaxLine-1500 {
					t.Fatalf("first request %d bytes: not on the line", n)
				}
			}
			appendFile(t, filepath.Join(dir, hostileNames[round], "raw.jsonl"), "{\"id\":2}\n")
		}
		for _, p := range []string{"PWNED", "PWNED2"} {
			if _, err := os.Stat(filepath.Join(cwd, p)); err == nil {
				t.Fatalf("a name ran: %s", p)
			}
		}
	}
	for name, d := range testawk.Dirs(t) {
		t.Run(name, func(t *testing.T) {
			t.Setenv("PATH", d+string(os.PathListSeparator)+path)
			ag := NewAgent(Local{})
			ag.UseBinary(selfAsBinary(t))
			t.Cleanup(ag.Close)
			run(t, ag)
		})
	}
	t.Run("go", func(t *testing.T) { run(t, goAgent(t)) })
	_ = context.Background
}

// lineOf is the length past MaxLine (negative: within) of ag's first
// command line for b, as start builds it: the launcher's lines are not
// portable (fitsLine), so MaxLine is its limit on every server.
func lineOf(ag *Agent, b *Batch) int {
	tmp := &Agent{alias: map[string]int{}, keys: map[string]int{}}
	b.nonce = "~000000000000"
	req := tmp.plan(b)
	frame, err := agentproto.NewWriter(nil).Frame(req)
	if err != nil {
		panic(err)
	}
	argv := ag.startArgv(b.nonce, frame)
	n := len(argv) - 1
	for _, w := range quoted(argv) {
		n += len(w)
	}
	return n - MaxLine
}

// padBatch is a batch whose first command line is MaxLine+over bytes.
func padBatch(t *testing.T, ag *Agent, dir string, over int) func() *Batch {
	// the pad does not deflate (a frame over 2 KB goes deflated when that
	// is smaller): random bytes, any but NUL and '/' (a name may hold
	// them), each pad a prefix of the next, so the line grows as base64
	// of one byte a pad
	letters := make([]byte, 20000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range letters {
		for letters[i] == 0 || letters[i] == '/' {
			letters[i] = byte(r.IntN(256))
		}
	}
	mk := func(pad int) *Batch {
		b := &Batch{}
		b.Cat(filepath.Join(dir, "it's $x `y` \\ %"+string(letters[:pad])), 100)
		for _, n := range hostileNames {
			b.Cat(filepath.Join(dir, n, "raw.jsonl"), 100)
		}
		return b
	}
	// the request rides as base64 (quoted when it ends in "="): the line
	// grows by steps of a few bytes, so "just within" is the longest line
	// within MaxLine+over, "just past" the shortest past it, of the pads
	// near the estimate
	lo, hi := 0, len(letters) // the longest pad within MaxLine+over, by halves
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if lineOf(ag, mk(mid)) <= over {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	est := lo
	best, bestGot := -1, 0
	for pad := max(est-300, 0); pad <= est+300; pad++ {
		got := lineOf(ag, mk(pad))
		if over <= 0 && got <= over && (best < 0 || got > bestGot) || over > 0 && got >= over && (best < 0 || got < bestGot) {
			best, bestGot = pad, got
		}
	}
	// a deflated frame's length moves in steps of up to some tens of bytes
	// as the pad grows by one (the deflater's blocks): "just" is the
	// nearest either side, within 128 bytes
	if best < 0 || bestGot-over > 128 || over-bestGot > 128 {
		t.Fatalf("pad %d: line %d past MaxLine, want %d", best, bestGot, over)
	}
	return func() *Batch { return mk(best) }
}

// A first request just within MaxLine travels on the line, one just past
// it on stdin; both answer as the one-shot does, locally and through
// each SSH server (Dropbear ends a connection on a line over 9,000; the
// launcher's lines are not portable, so OpenSSH's longer one is not used).
func TestAgentFirstRequestAtMaxLine(t *testing.T) {
	testgate.E2E(t)
	dir := hostileNamesTree(t)
	check := func(t *testing.T, mk func() *Agent) {
		for _, over := range []int{-1, 0, 1, 2} {
			ag := mk()
			b := padBatch(t, ag, dir, over)
			for round := 0; round < 2; round++ {
				sameAsOneShotOn(t, ag, b, round)
				if round == 0 {
					if got := firstOnTheLine(ag); got != (over <= 0) {
						t.Fatalf("%d past MaxLine: the first request on the line %v", over, got)
					}
				}
			}
			ag.Close()
		}
	}
	t.Run("local-go", func(t *testing.T) { check(t, func() *Agent { return goAgent(t) }) })
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			h := dial(t, opts(t, start(t)))
			bin := selfAsBinary(t)
			t.Run("go", func(t *testing.T) {
				check(t, func() *Agent { a := NewAgent(h); a.UseBinary(bin); return a })
			})
		})
	}
}

// sameAsOneShotOn is sameAsOneShot with the agent's own answers checked
// to come from a live agent (one start for every round).
func sameAsOneShotOn(t *testing.T, ag *Agent, batch func() *Batch, round int) {
	t.Helper()
	sameAsOneShot(t, ag, batch, round)
	if s, r := ag.Stats(); s != 1 || r != int64(round+1) {
		t.Fatalf("round %d: starts %d requests %d", round, s, r)
	}
}

// firstOnTheLine says whether a live agent of ag got a request on its
// command line.
func firstOnTheLine(ag *Agent) bool {
	ag.mu.Lock()
	nonce := ag.nonce
	ag.mu.Unlock()
	for _, p := range agentProcs(nonce) {
		b, _ := os.ReadFile(filepath.Join("/proc", p, "cmdline"))
		// the launcher execs the Go agent with the request's frame as its last word
		if w := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"); slices.Contains(w, "--serve") && w[len(w)-1] != "" {
			return true
		}
	}
	return false
}

// fakeBinary speaks the protocol on --proto and serves as body says.
func fakeBinary(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "synthwatch")
	writeFile(t, p, "#!/bin/sh\n[ \"$2\" = --proto ] && { echo "+AgentProto+"; exit 0; }\n"+body+"\n")
	must(t, os.Chmod(p, 0o755))
	return p
}

// An agent that ends, or hangs, before it reads stdin: Run answers an
// error, and nothing is left behind.
func TestAgentEndsOrHangsBeforeStdin(t *testing.T) {
	testgate.E2E(t)
	bodies := map[string]string{"exits": "exit 0", "fails": "exit 70", "hangs": "exec sleep 601",
		"hangs-quiet": "exec 0<&- 1>&- 2>&-; exec sleep 601"}
	for _, srv := range []string{"local", "openssh", "dropbear"} {
		var h Host = Local{}
		var hc *SSH
		if srv != "local" {
			hc = dial(t, opts(t, servers[srv](t)))
			h = hc
		}
		// A link the supervisor renews during the trials (a load spike past
		// the keepalives, a clock step read as a sleep) brings a whole new
		// connection's goroutines: not the agent's. The trials run again on
		// the new link, and the renewal is logged.
		for try := 1; ; try++ {
			leak, renewed := endsOrHangsTrials(t, srv, h, hc, bodies)
			if leak == nil {
				break
			}
			if !renewed || try == 3 {
				var st ConnState
				if hc != nil {
					st = hc.State()
				}
				t.Errorf("%s (try %d; link sessions %d, drops %d, last error %q): %v", srv, try, st.Sessions, st.Drops, st.Err, leak)
				break
			}
			st := hc.State()
			t.Logf("%s: the link was renewed during the trials (sessions %d, drops %d, last error %q): trying again", srv, st.Sessions, st.Drops, st.Err)
		}
		if hc != nil {
			hc.Close()
		}
	}
}

// endsOrHangsTrials runs an agent of each body on h and says what it left
// behind, and whether h's link was renewed meanwhile.
func endsOrHangsTrials(t *testing.T, srv string, h Host, hc *SSH, bodies map[string]string) (leak error, renewed bool) {
	sessions := 0
	if hc != nil {
		warm := NewAgent(h) // the link's own goroutines (sftp, keepalive) start before the trial
		warm.UseBinary(selfAsBinary(t))
		b := &Batch{}
		b.Cat("/proc/stat", 100)
		if _, err := warm.Run(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		warm.Close()
		sess, err := hc.session()
		if err != nil {
			t.Fatal(err)
		}
		sess.fs() // the SFTP session's goroutines are the link's too
		sessions = hc.State().Sessions
	}
	ignore := goleak.IgnoreCurrent()
	for name, body := range bodies {
		ag := NewAgent(h)
		ag.UseBinary(fakeBinary(t, body))
		b := &Batch{}
		b.Cat("/proc/stat", 100)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		done := make(chan error, 1)
		go func() { _, err := ag.Run(ctx, b); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s %s: no error from an agent that never answered", srv, name)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s %s: Run still waits after a minute", srv, name)
		}
		cancel()
		ag.Close()
		if name != "exits" && name != "fails" && srv != "local" {
			killNaming(t, "sleep\x00601") // an SSH server leaves a command that ignores its stdin's end
		}
	}
	// a hung command started late (a slow launcher under load) outlives the
	// kill above, and its channel with it: the kill is asked again until
	// nothing is left
	deadline := time.Now().Add(20 * time.Second)
	for {
		if srv != "local" {
			killNaming(t, "sleep\x00601")
		}
		if leak = goleak.Find(ignore); leak == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return leak, hc != nil && hc.State().Sessions != sessions
}

// killNaming ends this test's processes whose command line holds s.
func killNaming(t *testing.T, s string) {
	for _, p := range agentProcs(s) {
		if pid, err := strconv.Atoi(p); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// A second request while the channel's window still holds stdin shut
// waits for it, and comes in turn on stdin: its answer is the file's then,
// and the agent is the same.
func TestAgentRequestsRaceTheFeed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "a b's.txt")
	writeFile(t, f, "one\n")
	ag, h := heldBinaryAgent(t)
	b := func() *Batch { b := &Batch{}; b.Cat(f, 100); return b }
	if a, err := ag.Run(context.Background(), b()); err != nil || string(a.reads[f][0].data) != "one\n" {
		t.Fatalf("first: %v", err)
	}
	writeFile(t, f, "two\n")
	type res struct {
		a   *answers
		err error
	}
	got := make(chan res, 3)
	for range 3 { // three more, racing one another and the feed
		go func() { a, err := ag.Run(context.Background(), b()); got <- res{a, err} }()
	}
	select {
	case r := <-got:
		t.Fatalf("a request answered while the script was still held: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	close(h.release)
	for range 3 {
		r := <-got
		if r.err != nil || string(r.a.reads[f][0].data) != "two\n" {
			t.Fatalf("after the feed: %v %+v", r.err, r.a)
		}
	}
	if s, n := ag.Stats(); s != 1 || n != 4 {
		t.Fatalf("starts %d requests %d", s, n)
	}
}
