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
	l        *link
	err      error
	asked    atomic.Bool // it would have asked for a passphrase or a host key
}

// speculate starts the handshake on the parser's config over pre's
// connection; nil when there is nothing to start it on, or the parser
// cannot say (a ProxyJump, another address).
func speculate(ctx context.Context, o Options, pre *preDial) *speculation {
	if pre == nil || o.SSHBinary == "none" {
		return nil
	}
	po := o
	po.SSHBinary, po.Prompt = "none", nil
	guess, err := Resolve(ctx, po)
	if err != nil || len(guess.ProxyJump) > 0 || guess.Addr() != pre.addr {
		return nil
	}
	sp := &speculation{guess: guess, resolved: make(chan *Config, 1), done: make(chan struct{})}
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
		case <-time.After(guess.ConnectTimeout):
			return errNotSpeculated
		}
	}
	go func() {
		defer close(sp.done)
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
// else, or when it would have asked the user something, ok is false and
// the caller dials on c, the speculation left to end on its own.
func (sp *speculation) settle(c *Config) (l *link, ok bool, err error) {
	if sp == nil {
		return nil, false, nil
	}
	sp.resolved <- c
	if c == nil || !handshakeSame(sp.guess, *c) {
		return nil, false, nil
	}
	<-sp.done
	if sp.asked.Load() || errors.Is(sp.err, errNotSpeculated) {
		return nil, false, nil
	}
	return sp.l, true, sp.err
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
