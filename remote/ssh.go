package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// SSH is a Host over one SSH connection that carries the SFTP session, exec
// channels and forwards. A supervisor keeps it alive: keepalives find a dead
// link in ServerAliveInterval × ServerAliveCountMax, and it reconnects by
// itself with capped, jittered backoff. Operations fail fast with
// ErrDisconnected while the link is down.
type SSH struct {
	opts Options
	cfg  Config
	// speculated: the first link is the handshake begun beside ssh -G
	// (speculate.go); firstPre and firstSp are Open's first connect's,
	// taken once (s.mu)
	speculated bool
	firstPre   *preDial
	firstSp    *speculation

	mu      sync.Mutex
	cur     *session
	last    *session // the last session set up (cur, or the one a sleep left)
	state   ConnState
	changed chan struct{}
	dialed  chan struct{} // closed when the first connect ended, up or not (Dialed)
	dialOne sync.Once
	kick    chan struct{}
	woke    chan struct{} // a sleep was found (sleep.go)
	sleep   *sleepDetector
	asleep  bool // woke and not yet sure of the link: calls fail fast
	closed  chan struct{}
	once    sync.Once
	done    chan struct{}
	sent    int64 // bytes of links already closed
	recv    int64
	// csh: the user's login shell ends a command at a newline even inside
	// quotes (csh, tcsh), as a command said ("Unmatched '", NoteLoginCsh)
	// or the hint of a run before (pipeline): from then on no line with a
	// newline goes on the command line (wireCommand)
	csh atomic.Bool

	// Backoff bounds, changeable by tests.
	MinBackoff, MaxBackoff time.Duration
}

type session struct {
	link *link
	// The SFTP session opens when something first needs it (a file read
	// by itself, a write, an install), not at the connect: a poll through
	// the agent or the fallback never does, and on Dropbear the subsystem
	// (refused where it has no sftp-server) held every exec behind its
	// answer and the probe after it: 3 round trips on every status.
	// sc and scErr are set when ready is closed.
	fsOnce    sync.Once
	fsStarted atomic.Bool
	fsTimeout time.Duration
	ready     chan struct{}
	sc        *sftp.Client
	scErr     error
	dead      chan struct{} // closed when the SSH connection ends
	kept      kept          // files followed between polls (see Keeper)
}

// fs opens the SFTP session on its first call and waits for it.
func (s *session) fs() (*sftp.Client, error) {
	s.fsOnce.Do(func() { s.fsStarted.Store(true); go s.openFS() })
	<-s.ready
	return s.sc, s.scErr
}

// openFS asks for the SFTP subsystem; without one the link stays and its
// reads go through the shell (shellfs.go).
func (s *session) openFS() {
	l := s.link
	s.sc, s.scErr = withTimeout(context.Background(), s.fsTimeout, func() (*sftp.Client, error) {
		return sftp.NewClient(l.client, sftp.UseConcurrentReads(true), sftp.UseFstat(true))
	})
	dead := false
	select {
	case <-s.dead:
		dead = true
	default:
	}
	switch {
	case errors.Is(s.scErr, context.DeadlineExceeded):
		s.scErr = fmt.Errorf("sftp: %w", s.scErr)
		l.close() // no answer in time: the link is gone, the supervisor redials
	case s.scErr != nil && (dead || errors.Is(s.scErr, net.ErrClosed) || !linkAnswers(l, s.fsTimeout)):
		// the link died under the request: no word on the host's SFTP
		// (a host without one closes the subsystem's channel: an EOF too,
		// on a link that still answers)
		s.scErr = fmt.Errorf("sftp: the link closed: %w", s.scErr)
	case s.scErr != nil:
		// the host has no SFTP server (Dropbear's often have none)
		s.scErr = fmt.Errorf("%w (%v)", errNoSFTP, s.scErr)
		settleAfterFailedSubsystem(l.client)
	}
	close(s.ready)
}

// beforeExec waits, on Dropbear, for the SFTP subsystem's answer (and the
// probe after a refusal: settleAfterFailedSubsystem) before a command's
// channel opens, or that channel may be the one Dropbear drops. Other
// servers open commands beside it at once.
func (s *session) beforeExec(ctx context.Context) error {
	if !s.fsStarted.Load() || !bytes.Contains(bytes.ToLower(s.link.client.ServerVersion()), []byte("dropbear")) {
		return nil
	}
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// noSFTP: the host refused the SFTP subsystem; read through its shell.
func (s *session) noSFTP() bool {
	_, err := s.fs()
	return errors.Is(err, errNoSFTP)
}

// close drops the link first: on a dead link, sftp.Close alone would wait
// forever for the peer to confirm.
func (s *session) close() {
	s.link.close()
	if !s.fsStarted.Load() {
		return
	}
	go func() {
		if sc, err := s.fs(); err == nil {
			sc.Close()
		}
	}()
}

// Dial resolves the target, connects once and returns the host with its
// supervisor running. A failed first connection is returned as an error
// (status exits on it); use Open to keep trying in the background.
func Dial(ctx context.Context, o Options) (*SSH, error) {
	pre := startPreDial(ctx, o) // beside ssh -G
	defer pre.drop()
	sp := speculate(ctx, o, pre) // and the handshake on the parser's config
	s, err := newSSH(ctx, o)
	if err != nil {
		sp.abandon()
		return nil, err
	}
	sess, err := s.dialFirst(ctx, pre, sp)
	if err != nil {
		return nil, err
	}
	s.setSession(sess)
	go s.supervise(sess)
	return s, nil
}

// Open resolves the target and connects in the background; watch State.
// Only a configuration error is returned here.
func Open(ctx context.Context, o Options) (*SSH, error) {
	pre := startPreDial(ctx, o) // as Dial's: beside ssh -G
	sp := speculate(ctx, o, pre)
	s, err := newSSH(ctx, o)
	if err != nil {
		sp.abandon()
		pre.drop()
		return nil, err
	}
	s.firstPre, s.firstSp = pre, sp
	go s.supervise(nil)
	return s, nil
}

// dialFirst is a first connect: the handshake begun beside ssh -G where
// ssh -G's config holds it (speculate.go), else a dial that takes pre's
// connection.
func (s *SSH) dialFirst(ctx context.Context, pre *preDial, sp *speculation) (*session, error) {
	if sp != nil {
		l, ok, err := sp.settle(ctx, &s.cfg)
		if ok {
			if err != nil {
				return nil, err
			}
			s.speculated = true
			return newSession(l, s.cfg), nil
		}
		pre = nil // the speculation has pre's connection, or may yet take it: one of its own
	}
	return s.connectVia(ctx, pre)
}

// takeFirst is Open's first connect's pre-dial and speculation, once.
func (s *SSH) takeFirst() (*preDial, *speculation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pre, sp, had := s.firstPre, s.firstSp, s.firstPre != nil || s.firstSp != nil
	s.firstPre, s.firstSp = nil, nil
	return pre, sp, had
}

// connectNext is the supervisor's next connect: Open's first, once, else
// a dial.
func (s *SSH) connectNext(ctx context.Context) (*session, error) {
	if pre, sp, ok := s.takeFirst(); ok {
		defer pre.drop()
		return s.dialFirst(ctx, pre, sp)
	}
	return s.connect(ctx)
}

// dropFirst ends Open's first connect's pre-dial and speculation when no
// connect took them (the link closed first).
func (s *SSH) dropFirst() {
	if pre, sp, ok := s.takeFirst(); ok {
		sp.abandon()
		pre.drop()
	}
}

func newSSH(ctx context.Context, o Options) (*SSH, error) {
	cfg, err := Resolve(ctx, o)
	if err != nil {
		return nil, err
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	if o.Clock == nil {
		o.Clock = SystemClock()
	}
	return &SSH{
		opts: o, cfg: cfg, sleep: newSleepDetector(o.Clock),
		state:   ConnState{Phase: Connecting, Since: time.Now()},
		changed: make(chan struct{}, 1), dialed: make(chan struct{}), kick: make(chan struct{}, 1), woke: make(chan struct{}, 1),
		closed: make(chan struct{}), done: make(chan struct{}),
		MinBackoff: time.Second, MaxBackoff: 30 * time.Second,
	}, nil
}

// Dialed is closed once the first connect has ended, up or not: a
// dashboard's first poll waits for it (pipeline.Watcher.Poll) rather than
// failing on a link still being dialled and waiting for the next beat.
func (s *SSH) Dialed() <-chan struct{} { return s.dialed }

// Config is the resolved configuration.
func (s *SSH) Config() Config { return s.cfg }

// LoginCsh says whether the user's login shell is known to end a command
// at a newline even inside quotes (csh, tcsh).
func (s *SSH) LoginCsh() bool { return s.csh.Load() }

// NoteLoginCsh records that the login shell is csh's: the next commands
// go with no newline on their line (a script that has one on stdin; the
// fallback's packed batch has none).
func (s *SSH) NoteLoginCsh() { s.csh.Store(true) }

// CshSaid says whether stderr holds what csh and tcsh print for a command
// line whose single quotes a newline cut ("Unmatched" and the quote, in
// quotes or not): sh never ran. (tcsh goes on with the lines after it as
// commands of its own, which fail on sh's words, and may exit 0.)
// tcsh in another language translates the words ("Überflüssiges" and the
// quote quoted) but quotes the quote alike.
func CshSaid(stderr []byte) bool {
	return bytes.Contains(stderr, []byte("Unmatched '")) || bytes.Contains(stderr, []byte("'''"))
}

// ServerVersion is the server's identification ("SSH-2.0-OpenSSH_9.6…"),
// "" before a link is up.
func (s *SSH) ServerVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return ""
	}
	return string(s.cur.link.client.ServerVersion())
}

// State returns the connection state now.
func (s *SSH) State() ConnState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Changed is signalled (latest-wins) whenever State changes.
func (s *SSH) Changed() <-chan struct{} { return s.changed }

// ReconnectNow skips the backoff wait, or drops a live link and redials.
func (s *SSH) ReconnectNow() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Wire returns the bytes moved over the first TCP hop since Dial.
func (s *SSH) Wire() WireStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := WireStats{Sent: s.sent, Received: s.recv}
	if s.cur != nil {
		w.Sent += s.cur.link.stats.sent.Load()
		w.Received += s.cur.link.stats.recv.Load()
	}
	return w
}

func (s *SSH) setState(f func(*ConnState)) {
	s.mu.Lock()
	old := s.state
	f(&s.state)
	if s.state.Phase != old.Phase {
		s.state.Since = time.Now()
	}
	if s.state.Phase != Connecting {
		s.dialOne.Do(func() { close(s.dialed) })
	}
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *SSH) connect(ctx context.Context) (*session, error) { return s.connectVia(ctx, nil) }

// connectVia is connect taking pre's connection for a first hop to its address.
func (s *SSH) connectVia(ctx context.Context, pre *preDial) (*session, error) {
	l, err := dialLink(ctx, s.cfg, s.opts, func(ctx context.Context, addr string) (net.Conn, error) {
		if c := pre.take(ctx, addr); c != nil {
			return c, nil
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	})
	if err != nil {
		return nil, err
	}
	return newSession(l, s.cfg), nil
}

// newSession is a session on the link l, dialled on c.
func newSession(l *link, c Config) *session {
	sess := &session{link: l, fsTimeout: c.ConnectTimeout, ready: make(chan struct{}), dead: make(chan struct{})}
	go func() { _ = l.client.Wait(); close(sess.dead) }()
	return sess
}

// linkAnswers says whether the link answers a keepalive: after a failed
// SFTP open, a host that has none from a link that died under it.
func linkAnswers(l *link, within time.Duration) bool {
	_, err := withTimeout(context.Background(), within, func() (bool, error) {
		_, _, err := l.client.SendRequest("keepalive@openssh.com", true, nil)
		return err == nil, err
	})
	return err == nil
}

// settleAfterFailedSubsystem runs `exit 0` until it works (three tries):
// Dropbear, its SFTP subsystem's command just failed, drops the next
// channel opened before it has reaped that command (3 of 8 connections
// here, ssh.Session or not). A probe takes the loss; a working one means
// the host has caught up.
func settleAfterFailedSubsystem(c *ssh.Client) {
	for range 3 {
		e, err := startExec(c, []string{"exit", "0"}, false, false)
		if err != nil {
			continue
		}
		_ = e.ch.CloseWrite()
		_, _ = io.Copy(io.Discard, e.ch)
		err = <-e.status
		e.ch.Close()
		if err == nil {
			return
		}
	}
}

func (s *SSH) setSession(sess *session) {
	s.mu.Lock()
	s.cur, s.asleep = sess, false
	renewed := sess != s.last // a link that survived a sleep is the same session
	s.last = sess
	s.mu.Unlock()
	s.setState(func(st *ConnState) {
		st.Phase, st.Err, st.Cause, st.Attempt, st.LastContact, st.Waking = Connected, "", nil, 0, time.Now(), false
		if renewed {
			st.Sessions++
		}
	})
}

// retire closes a link and keeps its byte counts.
func (s *SSH) retire(sess *session) {
	sess.close()
	s.mu.Lock()
	if s.cur == sess {
		s.cur = nil
	}
	s.sent += sess.link.stats.sent.Load()
	s.recv += sess.link.stats.recv.Load()
	s.mu.Unlock()
}

// dropSession retires a live link that was lost.
func (s *SSH) dropSession(sess *session, why string) {
	s.retire(sess)
	s.setState(func(st *ConnState) { st.Phase, st.Err, st.Cause, st.Drops = Reconnecting, why, nil, st.Drops+1 })
}

// supervise watches the live session, and redials after it dies. After a
// sleep it finds a link at once (wake), without waiting for keepalives to
// time out; a lost link is redialled at once, then with backoff.
func (s *SSH) supervise(sess *session) {
	defer close(s.done)
	defer s.dropFirst()
	backoff := s.MinBackoff
	attempt := 0
	woke := false
	for {
		if sess != nil {
			why, slept := s.watch(sess)
			if !slept {
				s.dropSession(sess, why)
				sess = nil
			}
			attempt, backoff, woke = 0, s.MinBackoff, slept
		}
		if s.isClosed() {
			if sess != nil {
				s.retire(sess)
			}
			return
		}
		if woke {
			next, err := s.wake(sess) // it keeps the old link or retires it
			sess, woke = next, false
			switch {
			case next != nil:
				s.setSession(next)
				continue
			case errors.Is(err, errClosed):
				return
			case Fatal(err):
				s.setState(func(st *ConnState) { st.Phase, st.Err, st.Cause, st.Waking = Failed, err.Error(), err, false })
				return
			}
			// no link within the wake's window: the ordinary backoff from here
			s.setState(func(st *ConnState) { st.Err, st.Cause, st.Waking = err.Error(), err, false })
			attempt = 1
		}
		if attempt > 0 {
			wait := backoff/2 + rand.N(backoff/2+1)
			backoff = min(backoff*2, s.MaxBackoff)
			s.setState(func(st *ConnState) { st.Phase, st.NextTry, st.Attempt = Reconnecting, time.Now().Add(wait), attempt })
			select {
			case <-s.closed:
				return
			case <-s.kick:
			case <-s.woke:
				woke = true
				continue
			case <-time.After(wait):
			}
		}
		attempt++
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		next, err := s.connectNext(ctx)
		cancel()
		if err == nil {
			sess = next
			s.setSession(sess)
			continue
		}
		if Fatal(err) {
			s.setState(func(st *ConnState) { st.Phase, st.Err, st.Cause = Failed, err.Error(), err })
			return
		}
		s.setState(func(st *ConnState) { st.Phase, st.Err, st.Cause, st.Attempt = Reconnecting, err.Error(), err, attempt })
		if s.isClosed() {
			return
		}
	}
}

func (s *SSH) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// watch sends keepalive@openssh.com and returns when the link must go: no
// answer for ServerAliveInterval × ServerAliveCountMax, the connection
// closed, a reconnect was asked for, or Close; or when this machine slept
// (slept: the link is not dropped, wake decides). A blocked probe never
// wedges the loop: it runs in its own goroutine, and closing the link frees
// it.
func (s *SSH) watch(sess *session) (why string, slept bool) {
	interval, limit := s.cfg.ServerAliveInterval, s.cfg.ServerAliveInterval*time.Duration(s.cfg.ServerAliveCountMax)
	tick := time.NewTicker(min(interval, time.Second))
	defer tick.Stop()
	s.sleep.startTicks() // the time without a watchdog (no link) is no freeze
	probeDone := make(chan time.Duration, 1)
	inflight := false
	lastProbe := time.Time{}
	for {
		select {
		case <-s.closed:
			return "closed", false
		case <-s.kick:
			return "reconnect requested", false
		case <-s.woke:
			return "woke from a sleep", true
		case <-sess.dead:
			// a wake often shows first as the old connection's reset
			if s.checkSleep(0) {
				<-s.woke
				return "woke from a sleep", true
			}
			if sess.fsStarted.Load() {
				select {
				case <-sess.ready:
					// the one drop SFTP causes: no answer in time, and
					// openFS closed the link itself
					if errors.Is(sess.scErr, context.DeadlineExceeded) {
						return sess.scErr.Error(), false
					}
				default:
				}
			}
			return "connection closed by the host or the network", false
		case rtt := <-probeDone:
			inflight = false
			s.setState(func(st *ConnState) { st.RTT, st.LastContact = rtt, time.Now() })
		case <-tick.C:
			if s.checkSleep(frozenMin) {
				continue // s.woke is ready
			}
			if inflight && time.Since(s.State().LastContact) >= limit {
				return fmt.Sprintf("no answer to keepalives for %s", limit), false
			}
			if !inflight && time.Since(lastProbe) >= interval {
				inflight, lastProbe = true, time.Now()
				go func(start time.Time) {
					if _, _, err := sess.link.client.SendRequest("keepalive@openssh.com", true, nil); err == nil {
						probeDone <- time.Since(start)
					}
				}(lastProbe)
			}
		}
	}
}

// Close ends the connection and the supervisor; it never touches processes
// on the host (the worker keeps running).
func (s *SSH) Close() error {
	s.once.Do(func() { close(s.closed) })
	<-s.done
	s.mu.Lock()
	sess := s.cur
	s.cur = nil
	s.mu.Unlock()
	if sess != nil {
		sess.close()
	}
	s.setState(func(st *ConnState) { st.Phase = Closed })
	return nil
}

// session is the live link. Every call reads the clocks first, so the
// first call after a wake already fails fast (stale at once), before the
// watchdog's next tick.
func (s *SSH) session() (*session, error) {
	s.checkSleep(0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || s.asleep {
		return nil, ErrDisconnected
	}
	return s.cur, nil
}

func (s *SSH) contact() {
	s.mu.Lock()
	s.state.LastContact = time.Now()
	s.mu.Unlock()
}
