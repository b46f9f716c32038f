package remote

import (
	"context"
	"fmt"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh/knownhosts"
)

// viaProxy puts a fault proxy between the client and s, and returns
// options that pin s's host key for the proxy's address.
func viaProxy(t *testing.T, s *sshdtest.Server, extra ...string) (*faultproxy.Proxy, Options) {
	t.Helper()
	p, err := faultproxy.Start(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	writeFile(t, kh, knownhosts.Line([]string{knownhosts.Normalize(p.Addr())}, s.HostKey)+"\n")
	o := opts(t, s, extra...)
	o.Target = s.User + "@" + p.Addr()
	o.Opts = append([]string{"UserKnownHostsFile=" + kh, "StrictHostKeyChecking=yes"}, extra...)
	return p, o
}

var fast = []string{"ServerAliveInterval=1", "ServerAliveCountMax=2", "ConnectTimeout=2"}

// seqTail appends numbered lines and checks that the tail sees each exactly once.
type seqTail struct {
	t    *testing.T
	path string
	tail *Tail
	next int // next number to write
	seen int // next number expected
}

func newSeqTail(t *testing.T) *seqTail {
	p := filepath.Join(t.TempDir(), "inference_all.log")
	writeFile(t, p, "")
	return &seqTail{t: t, path: p, tail: NewTail(p)}
}

func (s *seqTail) write(n int) {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%d/100000 (0 err) 1.0 req/s avg_comp=200tok ETA=1h\n", s.next)
		s.next++
	}
	appendFile(s.t, s.path, b.String())
}

// catchUp polls until every written line was seen, in order, once.
func (s *seqTail) catchUp(h Host) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.seen < s.next {
		up := s.tail.Poll(context.Background(), h)
		if up.Err != nil {
			if time.Now().After(deadline) {
				s.t.Fatalf("tail: %v", up.Err)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for _, l := range up.Lines {
			n, _ := strconv.Atoi(l.Text[:strings.IndexByte(l.Text, '/')])
			if n != s.seen {
				s.t.Fatalf("line %d seen where %d was due: lost or repeated", n, s.seen)
			}
			s.seen++
		}
	}
}

func TestBlackHoleDetectedThenReconnected(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	p, o := viaProxy(t, s, fast...)
	h := dial(t, o)
	h.MaxBackoff = 2 * time.Second
	st := newSeqTail(t)
	st.write(10)
	st.catchUp(h)

	p.SetMode(faultproxy.BlackHole)
	start := time.Now()
	waitPhase(t, h, Reconnecting, 10*time.Second)
	detect := time.Since(start)
	// interval × count = 2 s, plus the 1 s watchdog tick; the defaults
	// (45 s) would miss waitPhase's deadline. BenchmarkDeadLink measures it.
	t.Logf("dead link found after %s", detect)
	if _, err := h.Stat(context.Background(), st.path); err != ErrDisconnected {
		t.Errorf("operation while down: %v, want ErrDisconnected at once", err)
	}
	st.write(25) // the job goes on while we are away

	p.SetMode(faultproxy.Forward)
	// a handshake begun during the outage times out (2 s), then one backoff
	// step: well inside the deadline, which bounds a hang and measures
	// nothing (BenchmarkDeadLink does)
	back := waitPhase(t, h, Connected, 30*time.Second)
	st.catchUp(h)
	t.Logf("dead link detected in %s; reconnected %s after the link came back", detect.Round(time.Millisecond), back.Round(time.Millisecond))
}

func TestResetAndSSHDRestartReconnect(t *testing.T) {
	testgate.E2E(t) // 16 s: CI's end-to-end run, not the quick suite
	t.Parallel()
	s := sshdtest.Start(t)
	p, o := viaProxy(t, s, fast...)
	h := dial(t, o)
	st := newSeqTail(t)
	st.write(5)
	st.catchUp(h)

	drops := h.State().Drops
	p.Reset()
	waitDropped(t, h, drops, 10*time.Second)
	st.write(5)
	waitPhase(t, h, Connected, 30*time.Second)
	st.catchUp(h)

	drops = h.State().Drops
	s.Restart()
	waitDropped(t, h, drops, 10*time.Second)
	st.write(5)
	waitPhase(t, h, Connected, 10*time.Second)
	st.catchUp(h)

	drops = h.State().Drops
	h.ReconnectNow() // the "C" key: drop and redial at once
	waitDropped(t, h, drops, 30*time.Second)
	waitPhase(t, h, Connected, 30*time.Second)
	if r, err := h.Exec(context.Background(), "echo", "ok"); err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("after reconnects: %v", err)
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Ten outages leave no goroutine and no descriptor behind.
func TestTenFaultCyclesLeakNothing(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	s := sshdtest.Start(t)
	p, o := viaProxy(t, s, fast...)
	ignore := goleak.IgnoreCurrent()
	h := dial(t, o)
	h.MaxBackoff = time.Second
	st := newSeqTail(t)
	st.write(3)
	st.catchUp(h)
	time.Sleep(200 * time.Millisecond)
	g0, fd0 := runtime.NumGoroutine(), openFDs(t)
	for i := 0; i < 10; i++ {
		if i%3 == 2 {
			p.SetMode(faultproxy.BlackHole)
			waitPhase(t, h, Reconnecting, 10*time.Second)
			p.SetMode(faultproxy.Forward)
		} else {
			drops := h.State().Drops
			p.Reset()
			waitDropped(t, h, drops, 10*time.Second)
		}
		waitPhase(t, h, Connected, 10*time.Second)
		st.write(3)
		st.catchUp(h)
	}
	// old handles are closed asynchronously: wait for them to go, as
	// goleak.VerifyNone does, rather than sleep and count once
	var g1, fd1 int
	settled := func() bool {
		g1, fd1 = runtime.NumGoroutine(), openFDs(t)
		return g1 <= g0+2 && fd1 <= fd0+2
	}
	deadline := time.Now().Add(10 * time.Second)
	for !settled() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("goroutines %d -> %d, fds %d -> %d", g0, g1, fd0, fd1)
	if g1 > g0+2 || fd1 > fd0+2 {
		t.Errorf("grew over 10 cycles (still after 10 s): goroutines %d -> %d, fds %d -> %d", g0, g1, fd0, fd1)
	}
	h.Close()
	if err := leftAfter(20*time.Second, ignore); err != nil {
		t.Error(err)
	}
}
