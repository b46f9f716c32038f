package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// Fatal tells errors that retrying cannot fix (host key, auth, config) from
// network errors, which are retried.
func Fatal(err error) bool {
	var hk *HostKeyError
	var au *AuthError
	var ce *ConfigError
	if errors.As(err, &hk) || errors.As(err, &au) || errors.As(err, &ce) {
		return true
	}
	return err != nil && strings.Contains(err.Error(), "ssh: unable to authenticate")
}

// asAuth turns x/crypto's "unable to authenticate" into an AuthError.
func asAuth(err error) error {
	if err != nil && strings.Contains(err.Error(), "ssh: unable to authenticate") {
		var au *AuthError
		if !errors.As(err, &au) {
			return &AuthError{err}
		}
	}
	return err
}

// link is one SSH connection (through its jump hosts) and the byte counts
// of its first TCP hop, which carries everything.
type link struct {
	client *ssh.Client
	jumps  []*ssh.Client
	stats  *wireStats
}

func (l *link) close() {
	l.client.Close()
	for i := len(l.jumps) - 1; i >= 0; i-- {
		l.jumps[i].Close()
	}
}

// dialLink connects to c, hopping through its ProxyJump hosts, with a
// deadline on every TCP dial and every SSH handshake.
func dialLink(ctx context.Context, c Config, o Options, dialTCP func(ctx context.Context, addr string) (net.Conn, error)) (*link, error) {
	hops := make([]Config, 0, len(c.ProxyJump)+1)
	for _, j := range c.ProxyJump {
		jc, err := Resolve(ctx, Options{Target: j, ConfigFile: o.ConfigFile, Identities: o.Identities, Opts: o.Opts, Home: o.Home, SSHBinary: o.SSHBinary})
		if err != nil {
			return nil, fmt.Errorf("ProxyJump %s: %w", j, err)
		}
		jc.ProxyJump = nil
		hops = append(hops, jc)
	}
	hops = append(hops, c)
	l := &link{stats: &wireStats{}}
	var prev *ssh.Client
	for i, h := range hops {
		var conn net.Conn
		var err error
		dctx, cancel := context.WithTimeout(ctx, h.ConnectTimeout)
		if prev == nil {
			conn, err = dialTCP(dctx, h.Addr())
			if err == nil {
				conn = &countingConn{Conn: conn, s: l.stats}
			}
		} else {
			conn, err = prev.DialContext(dctx, "tcp", h.Addr())
		}
		cancel()
		if err != nil {
			l.closeJumps()
			var oe *net.OpError
			if errors.As(err, &oe) && oe.Op == "dial" {
				return nil, err // it says "dial tcp ADDR: ..." already
			}
			return nil, fmt.Errorf("dial %s: %w", h.Addr(), err)
		}
		client, err := handshake(ctx, conn, h, o)
		if err != nil {
			l.closeJumps()
			return nil, fmt.Errorf("ssh %s@%s: %w", h.User, h.Addr(), err)
		}
		if i < len(hops)-1 {
			l.jumps = append(l.jumps, client)
		} else {
			l.client = client
		}
		prev = client
	}
	return l, nil
}

func (l *link) closeJumps() {
	for i := len(l.jumps) - 1; i >= 0; i-- {
		l.jumps[i].Close()
	}
}

// handshake runs the SSH handshake on conn, closing conn if it takes longer
// than the connect timeout: without this a handshake can hang for hours
// (golang/go#15113), and channel conns of jump hosts have no SetDeadline.
func handshake(ctx context.Context, conn net.Conn, h Config, o Options) (*ssh.Client, error) {
	hk, err := newHostKeys(h, o.Prompt)
	if err != nil {
		conn.Close()
		return nil, err
	}
	keys, closeAgent, err := signers(h, o.Prompt)
	if err != nil {
		conn.Close()
		return nil, err
	}
	defer closeAgent() // the agent is only needed to sign during the handshake
	cfg := &ssh.ClientConfig{
		User:              h.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(keys...)},
		HostKeyCallback:   hk.callback,
		HostKeyAlgorithms: hk.algorithms(h.Addr()),
		Timeout:           h.ConnectTimeout,
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(h.ConnectTimeout, func() { timedOut.Store(true); conn.Close() })
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	// The speculation's gate waits for ssh -G (speculate.go): that wait is
	// ssh -G's, with its own limit, not the handshake's.
	if gate := o.gate; gate != nil {
		cb := cfg.HostKeyCallback
		cfg.HostKeyCallback = func(host string, remote net.Addr, key ssh.PublicKey) error {
			timer.Stop()
			err := gate()
			timer.Reset(h.ConnectTimeout)
			if err != nil {
				return err
			}
			return cb(host, remote, key)
		}
	}
	// Host key prompts wait for a person: they must not count against the timeout.
	if o.Prompt != nil && h.StrictHostKey == "ask" {
		cb := cfg.HostKeyCallback
		cfg.HostKeyCallback = func(host string, remote net.Addr, key ssh.PublicKey) error {
			timer.Stop()
			defer timer.Reset(h.ConnectTimeout)
			return cb(host, remote, key)
		}
	}
	sc, chans, reqs, err := ssh.NewClientConn(conn, h.Addr(), cfg)
	timer.Stop()
	stop()
	if err != nil {
		conn.Close()
		if timedOut.Load() {
			return nil, fmt.Errorf("handshake timed out after %s", h.ConnectTimeout)
		}
		return nil, asAuth(err)
	}
	return ssh.NewClient(sc, chans, reqs), nil
}

// wireStats counts bytes on the first TCP hop: the real cost of a poll.
type wireStats struct {
	sent, recv atomic.Int64
}

type countingConn struct {
	net.Conn
	s *wireStats
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.s.recv.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.s.sent.Add(int64(n))
	return n, err
}
