package remote

import (
	"context"
	"fmt"
)

// fileReads is how the Poller reads one file in a poll: from the host
// (hostReads) or from a batch's handle, the host for what it did not
// hold (answeredReads). One plan and one apply serve both.
type fileReads interface {
	stat(ctx context.Context) (FileInfo, error)
	servedStat() (FileInfo, error, bool)                        // the stat when the answer holds it, without the host
	read(ctx context.Context, off, n int64) ([]byte, error)     // through a kept handle, where the host keeps them
	readPath(ctx context.Context, off, n int64) ([]byte, error) // by path, never a kept handle
	hostCount(off, n int64) (hostCount, bool)                   // the host's count of [off, off+n), when answered
	digest() ([]byte, bool)                                     // a first attach's history, digested on the host
	starts() ([]string, bool)                                   // a server log's start lines before that history
	forget()
}

// hostReads reads a file by Host calls.
type hostReads struct {
	h      Host
	keeper Keeper
	path   string
}

func (r hostReads) stat(ctx context.Context) (FileInfo, error) { return r.h.Stat(ctx, r.path) }
func (hostReads) servedStat() (FileInfo, error, bool)          { return FileInfo{}, nil, false }

func (r hostReads) read(ctx context.Context, off, n int64) ([]byte, error) {
	if r.keeper != nil {
		return r.keeper.ReadKept(ctx, r.path, off, int(n))
	}
	return r.h.ReadAt(ctx, r.path, off, int(n))
}

func (r hostReads) readPath(ctx context.Context, off, n int64) ([]byte, error) {
	return r.h.ReadAt(ctx, r.path, off, int(n))
}

func (hostReads) hostCount(int64, int64) (hostCount, bool) { return hostCount{}, false }
func (hostReads) digest() ([]byte, bool)                   { return nil, false }

// starts: a local server log's, scanned (Local.TailStarts).
func (r hostReads) starts() ([]string, bool) {
	if sg, ok := r.h.(tailStarter); ok {
		return sg.TailStarts(r.path)
	}
	return nil, false
}

func (r hostReads) forget() {
	if r.keeper != nil {
		r.keeper.Forget(r.path)
	}
}

// answeredReads reads a file from its handle's answer; what the answer
// does not hold goes to the host, counted as not in the batch.
type answeredReads struct {
	f    *fileAns
	host hostReads
	asks *PollAsks
}

func (r answeredReads) stat(ctx context.Context) (FileInfo, error) {
	if fi, err, ok := r.servedStat(); ok {
		return fi, err
	}
	r.asks.note(false, func() string { return "stat " + r.host.path })
	return r.host.stat(ctx)
}

// servedStat is the stat when the answer holds it (a hit), without the host.
func (r answeredReads) servedStat() (FileInfo, error, bool) {
	if r.f.stat == nil {
		return FileInfo{}, nil, false
	}
	r.asks.note(true, nil)
	return r.f.stat.fi, r.f.stat.err, true
}

func (r answeredReads) served(off, n int64) ([]byte, error, bool) {
	data, err, ok := r.f.read(off, n)
	r.asks.note(ok, func() string { return fmt.Sprintf("read %s %d+%d", r.host.path, off, n) })
	return data, err, ok
}

func (r answeredReads) read(ctx context.Context, off, n int64) ([]byte, error) {
	if data, err, ok := r.served(off, n); ok {
		return data, err
	}
	return r.host.read(ctx, off, n)
}

func (r answeredReads) readPath(ctx context.Context, off, n int64) ([]byte, error) {
	if data, err, ok := r.served(off, n); ok {
		return data, err
	}
	return r.host.readPath(ctx, off, n)
}

func (r answeredReads) hostCount(off, n int64) (hostCount, bool) {
	c, ok := r.f.hostCount(off, n)
	r.asks.note(ok, func() string { return fmt.Sprintf("count %s %d+%d", r.host.path, off, n) })
	return c, ok
}

func (r answeredReads) digest() ([]byte, bool)   { return r.f.digest, r.f.digest != nil }
func (r answeredReads) starts() ([]string, bool) { return r.f.startLines() }
func (r answeredReads) forget()                  { r.host.forget() }

// reads is how this poll reads the file at name, whose answer is f (nil: none).
func (p *Poller) reads(h Host, keeper Keeper, f *fileAns, name string) fileReads {
	host := hostReads{h: h, keeper: keeper, path: name}
	if !p.Asks.Answered() {
		return host
	}
	if f == nil {
		f = &fileAns{} // the batch did not foresee it: all from the host
	}
	return answeredReads{f: f, host: host, asks: p.Asks}
}
