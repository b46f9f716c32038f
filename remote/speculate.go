package remote

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"time"
)

// The handshake waited for `ssh -G` (25-30 ms of a process and its
// libraries on a loaded laptop) before its first byte, while the habit's
// ssh reads its config in-process. The handshake now starts at once on
// the pre-dialled connection with the config the Go parser reads
// (resolveWithParser), beside ssh -G; it goes past the server's host key
// only when ssh -G's config says the same of every field the handshake
// reads (handshakeSame), and is otherwise dropped, the link then dialled
// on ssh -G's config as before (a TCP connect more). It never asks the
// user anything: a host key to confirm or a key's passphrase ends it, and
// the dial that follows asks.

// errNotSpeculated ends a handshake begun on a config ssh -G does not
// confirm, or one that would have asked the user something.
var errNotSpeculated = errors.New("not the config ssh -G resolved")

type speculation struct {
	guess    Config
	resolved chan *Config // ssh -G's config; nil: give up
	done     chan struct{}
	cancel   context.CancelFunc // ends it where it is
	l        *link
	err      error
	asked    atomic.Bool // it would have asked for a passphrase or a host key
}

// speculate starts the handshake on the parser's config over pre's
// connection; nil when there is nothing to start it on, or the parser
// cannot say (a Match block it does not apply, a ProxyJump, another
// address): a handshake dropped at the host key is a connection the host
// sees closed before auth, which it need not see for nothing.
func speculate(ctx context.Context, o Options, pre *preDial) *speculation {
	if pre == nil || pre.matched || o.SSHBinary == "none" {
		return nil
	}
	po := o
	po.SSHBinary, po.Prompt = "none", nil
	guess, err := Resolve(ctx, po)
	if err != nil || len(guess.ProxyJump) > 0 || guess.Addr() != pre.addr {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	sp := &speculation{guess: guess, resolved: make(chan *Config, 1), done: make(chan struct{}), cancel: cancel}
	po.Prompt = refuser{sp}
	po.gate = func() error {
		select {
		case c := <-sp.resolved:
			if c == nil || !handshakeSame(guess, *c) || sp.asked.Load() {
				return errNotSpeculated
			}
			return nil
		case <-ctx.Done(): // nobody settles it (a link closed first)
			return errNotSpeculated
		case <-time.After(sshGLimit): // ssh -G's own: it has failed by then
			return errNotSpeculated
		}
	}
	go func() {
		defer close(sp.done)
		defer cancel()
		sp.l, sp.err = dialLink(ctx, guess, po, func(ctx context.Context, addr string) (net.Conn, error) {
			if c := pre.take(ctx, addr); c != nil {
				return c, nil
			}
			return nil, errNotSpeculated // no connection of its own: the dial after it makes one
		})
	}()
	return sp
}

// refuser answers every question no, and marks that one was asked.
type refuser struct{ sp *speculation }

func (r refuser) ConfirmHostKey(string, string, string) (bool, error) {
	r.sp.asked.Store(true)
	return false, errNotSpeculated
}

func (r refuser) Passphrase(string) ([]byte, error) {
	r.sp.asked.Store(true)
	return nil, errNotSpeculated
}

// settle gives the speculation ssh -G's config c (nil: ssh -G failed).
// When c says what the guess said, the handshake begun on it is the
// dial's: its link, or its error (the same dial would meet it again);
// else, or when it would have asked the user something, or ctx ended,
// ok is false: the caller dials on c on a connection of its own, and the
// speculation ends on its own at the host key.
func (sp *speculation) settle(ctx context.Context, c *Config) (l *link, ok bool, err error) {
	if sp == nil {
		return nil, false, nil
	}
	sp.resolved <- c
	if c == nil || !handshakeSame(sp.guess, *c) {
		return nil, false, nil
	}
	select {
	case <-sp.done:
	case <-ctx.Done():
		sp.cancel() // a Close while it dials: it ends now, not at its timeout
		return nil, false, nil
	}
	if sp.asked.Load() || errors.Is(sp.err, errNotSpeculated) {
		return nil, false, nil
	}
	return sp.l, true, sp.err
}

// abandon ends a speculation nobody will settle (a link closed before its
// first connect).
func (sp *speculation) abandon() {
	if sp == nil {
		return
	}
	select {
	case sp.resolved <- nil:
	default:
	}
	sp.cancel()
}

// handshakeSame: a and b say the same of everything the handshake reads
// (where it connects, as whom, with which keys, against which known
// hosts and how strictly, within what time). The keepalive, read after
// the handshake, is the resolved config's whatever the guess said.
func handshakeSame(a, b Config) bool {
	return a.HostName == b.HostName && a.Port == b.Port && a.User == b.User &&
		slices.Equal(a.IdentityFiles, b.IdentityFiles) && a.IdentityDefaults == b.IdentityDefaults &&
		a.IdentitiesOnly == b.IdentitiesOnly && a.IdentityAgent == b.IdentityAgent &&
		slices.Equal(a.KnownHostsFiles, b.KnownHostsFiles) && a.StrictHostKey == b.StrictHostKey &&
		a.ConnectTimeout == b.ConnectTimeout && len(a.ProxyJump) == 0 && len(b.ProxyJump) == 0
}
