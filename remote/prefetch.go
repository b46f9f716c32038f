package remote

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

var errNotExist = fs.ErrNotExist

// Prefetch is a Host that answers from a Batch's answers while it is
// armed, and asks the host it wraps otherwise. What it serves is what the
// host said at the batch's time, so it is armed for one poll only. A
// question the batch did not foresee (a miss) goes to the host: a miss
// costs round trips, never a wrong answer. It serves what the Poller asks
// as Host calls (stats, reads, host counts); every other op's answer is
// its handle's alone (asks.go).
type Prefetch struct {
	Host
	mu     sync.Mutex
	a      *answers
	hits   atomic.Int64
	misses atomic.Int64
	missed []string // the first questions missed, for tests and logs
	// unpack: the host unpacks a packed command (its fallback's U record,
	// or SetUnpack from what a past run learnt): a fallback batch then
	// travels whole on the command line when it fits (PackCommand)
	unpack atomic.Bool
}

// NewPrefetch wraps h, disarmed.
func NewPrefetch(h Host) *Prefetch { return &Prefetch{Host: h} }

// Load runs b on the host in one exec and arms the answers. On an error
// nothing is armed and the poll asks the host as usual.
func (p *Prefetch) Load(ctx context.Context, b *Batch) error {
	res, err := p.run(ctx, b)
	if err != nil {
		return fmt.Errorf("batch read: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("batch read: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	a, err := p.parse(res.Stdout, b)
	p.mu.Lock()
	p.a = a.served(b) // what parsed before an error is still true
	p.mu.Unlock()
	return err
}

// run runs b by the fallback: packed, whole on the command line, when the
// host unpacks and it fits there, else as it is. A packed command the host
// could not unpack runs again as it is, and the host is taken for one that
// cannot (a round trip lost once, never an answer).
func (p *Prefetch) run(ctx context.Context, b *Batch) (ExecResult, error) {
	if !p.unpack.Load() {
		return p.Host.Exec(ctx, b.Argv()...)
	}
	if argv, ok := PackCommand(b.Argv()); ok {
		res, err := p.Host.Exec(ctx, argv...)
		if err != nil || res.ExitCode != ExitUnpack || !bytes.Contains(res.Stderr, []byte("could not unpack")) {
			return res, err
		}
		p.unpack.Store(false)
		slog.Info("the host could not unpack the fallback's packed command; it goes as it is from now on", "err", cut(strings.TrimSpace(string(res.Stderr)), 512))
	}
	return p.Host.Exec(ctx, b.Argv()...)
}

// parse is parseBatchOf of the fallback's answer, and keeps what its U
// record says.
func (p *Prefetch) parse(out []byte, b *Batch) (*answers, error) {
	a, err := parseBatchOf(out, b, nil)
	if a.unpack.said {
		p.unpack.Store(a.unpack.ok)
	}
	return a, err
}

// Unpacks says whether the host unpacks a packed command, as last learnt.
func (p *Prefetch) Unpacks() bool { return p.unpack.Load() }

// SetUnpack says whether the host unpacks a packed command (a past run's
// word, kept per host: the cold poll goes packed too).
func (p *Prefetch) SetUnpack(ok bool) { p.unpack.Store(ok) }

// LoadVia runs b through the agent and arms the answers; on an error
// nothing is armed (the poll reads the files itself).
func (p *Prefetch) LoadVia(ctx context.Context, ag *Agent, b *Batch) error {
	a, err := ag.Run(ctx, b)
	p.mu.Lock()
	p.a = a.served(b) // what parsed before an error is still true
	p.mu.Unlock()
	return err
}

// LoadEither runs b through the agent and fb by the fallback side by side,
// and arms the agent's answers when it answered, else the fallback's: a
// cold poll of a host that had no agent last time costs the fallback's one
// exec, not the launcher's "none here" first and the exec after it. It
// says whether the agent answered, and each one's error.
func (p *Prefetch) LoadEither(ctx context.Context, ag *Agent, b, fb *Batch) (agent bool, agentErr, fallbackErr error) {
	type fbRes struct {
		a   *answers
		err error
	}
	fc := make(chan fbRes, 1)
	fctx, stop := context.WithCancel(ctx) // the fallback ends once the agent answered
	defer stop()
	go func() {
		res, err := p.run(fctx, fb)
		switch {
		case err != nil:
			fc <- fbRes{err: fmt.Errorf("batch read: %w", err)}
		case res.ExitCode != 0:
			fc <- fbRes{err: fmt.Errorf("batch read: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))}
		default:
			a, err := p.parse(res.Stdout, fb)
			fc <- fbRes{a, err}
		}
	}()
	a, aerr := ag.Run(ctx, b)
	if aerr == nil {
		p.mu.Lock()
		p.a = a.served(b)
		p.mu.Unlock()
		// the fallback's exec is ended (its channel closed, the host's
		// script cut at its next write), not left to read a first
		// contact's every category on the host for nothing
		return true, nil, nil
	}
	r := <-fc
	p.mu.Lock()
	p.a = r.a.served(fb) // what parsed before an error is still true
	p.mu.Unlock()
	return false, aerr, r.err
}

// Disarm ends the batch's answers: from now on every question goes to the host.
func (p *Prefetch) Disarm() {
	p.mu.Lock()
	p.a = nil
	p.mu.Unlock()
}

// Armed says whether the batch answers: Disarm not called yet.
func (p *Prefetch) Armed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.a != nil
}

// Counts are the questions answered from the batch and those that went to the host.
func (p *Prefetch) Counts() (hits, misses int64) { return p.hits.Load(), p.misses.Load() }

// Missed lists the first questions that went to the host while armed.
func (p *Prefetch) Missed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.missed...)
}

// served looks up a question while armed; ok false is a miss.
func served[T any](p *Prefetch, what string, f func(*answers) (T, bool)) (T, bool) {
	p.mu.Lock()
	a := p.a
	p.mu.Unlock()
	var zero T
	if a == nil {
		return zero, false
	}
	v, ok := f(a)
	if ok {
		p.hits.Add(1)
	} else {
		p.misses.Add(1)
		p.mu.Lock()
		if len(p.missed) < 32 {
			p.missed = append(p.missed, what)
		}
		p.mu.Unlock()
	}
	return v, ok
}

func (p *Prefetch) Stat(ctx context.Context, name string) (FileInfo, error) {
	if s, ok := served(p, "stat "+name, func(a *answers) (statAns, bool) { s, ok := a.stats[path.Clean(name)]; return s, ok }); ok {
		return s.fi, s.err
	}
	return p.Host.Stat(ctx, name)
}

// read serves [off, off+n) from a read that covers it, or reached the end of the file.
func (a *answers) read(name string, off int64, n int) (readRes, bool) {
	for _, r := range a.reads[path.Clean(name)] {
		end := r.off + int64(len(r.data))
		switch {
		case r.err != nil && r.off == off:
			return readRes{err: r.err}, true
		case r.err != nil || off < r.off || off > end:
		case off+int64(n) <= end:
			return readRes{data: append([]byte(nil), r.data[off-r.off:off-r.off+int64(n)]...)}, true
		case r.eof:
			return readRes{data: append([]byte(nil), r.data[off-r.off:]...)}, true
		}
	}
	return readRes{}, false
}

type readRes struct {
	data []byte
	err  error
}

func (p *Prefetch) readFrom(name string, off int64, n int) (readRes, bool) {
	return served(p, fmt.Sprintf("read %s %d+%d", name, off, n), func(a *answers) (readRes, bool) { return a.read(name, off, n) })
}

func (p *Prefetch) ReadAt(ctx context.Context, name string, off int64, n int) ([]byte, error) {
	if r, ok := p.readFrom(name, off, n); ok {
		return r.data, r.err
	}
	return p.Host.ReadAt(ctx, name, off, n)
}

// ReadKept is Keeper's read: from the batch, else through the host's kept handle.
func (p *Prefetch) ReadKept(ctx context.Context, name string, off int64, n int) ([]byte, error) {
	if r, ok := p.readFrom(name, off, n); ok {
		return r.data, r.err
	}
	if k, ok := p.Host.(Keeper); ok {
		return k.ReadKept(ctx, name, off, n)
	}
	return p.Host.ReadAt(ctx, name, off, n)
}

func (p *Prefetch) Forget(name string) {
	if k, ok := p.Host.(Keeper); ok {
		k.Forget(name)
	}
}

func (p *Prefetch) Exec(ctx context.Context, argv ...string) (ExecResult, error) {
	if r, ok := served(p, "exec "+strings.Join(argv, " "), func(a *answers) (ExecResult, bool) { return a.exec(argv) }); ok {
		return r, nil
	}
	return p.Host.Exec(ctx, argv...)
}

// exec answers a host count of ranges the batch counted (hostCountArgv,
// the Poller's), in hostCountScript's words. An Exec op's answer is its
// handle's (ExecAsk), never served here.
func (a *answers) exec(argv []string) (ExecResult, bool) {
	pre := hostCountArgv(nil)
	if len(argv) <= len(pre) || (len(argv)-len(pre))%3 != 0 {
		return ExecResult{}, false
	}
	for i := range pre {
		if argv[i] != pre[i] {
			return ExecResult{}, false
		}
	}
	var out strings.Builder
	for i, r := 1, argv[len(pre):]; len(r) > 0; i, r = i+1, r[3:] {
		c, ok := a.counts[path.Clean(r[0])]
		if !ok || strconv.FormatInt(c.from, 10) != r[1] || strconv.FormatInt(c.n, 10) != r[2] {
			return ExecResult{}, false
		}
		if c.err != "" {
			fmt.Fprintf(&out, "%d ! %s\n", i, c.err)
		} else {
			fmt.Fprintf(&out, "%d %d %d\n", i, c.lines, c.from-1+c.n)
		}
	}
	return ExecResult{Stdout: []byte(out.String())}, true
}

// ReadLink and RealPath go to the host: the batch's answers to them are
// handles' (PathAsk, ProcsAsk).
func (p *Prefetch) ReadLink(ctx context.Context, name string) (string, error) {
	if l, ok := p.Host.(Linker); ok {
		return l.ReadLink(ctx, name)
	}
	return "", fmt.Errorf("readlink %s: the host cannot read links", name)
}

func (p *Prefetch) RealPath(ctx context.Context, name string) (string, error) {
	if l, ok := p.Host.(Linker); ok {
		return l.RealPath(ctx, name)
	}
	return "", fmt.Errorf("realpath %s: the host cannot resolve paths", name)
}
