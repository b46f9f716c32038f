package remote

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync/atomic"
)

var errNotExist = fs.ErrNotExist

// Fallback runs a Batch by the fallback (host/fallback.sh) in one exec on
// the host it wraps; each op's answer is its handle's. It keeps what the
// host said of unpacking: the batch then travels whole on the command
// line when it fits (PackCommand).
type Fallback struct {
	h      Host
	unpack atomic.Bool
	// failed: a packed command this host could not unpack (exit
	// ExitUnpack); its U record, which says only that base64 and gzip are
	// there (a busybox gzip built without -d has them), no longer counts
	failed atomic.Bool
}

// NewFallback runs batches on h.
func NewFallback(h Host) *Fallback { return &Fallback{h: h} }

// Run runs b in one exec and answers its handles. On an error what parsed
// before it stands; the handles not answered say so.
func (f *Fallback) Run(ctx context.Context, b *Batch) error {
	res, err := f.run(ctx, b)
	if err != nil {
		return fmt.Errorf("batch read: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("batch read: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return f.parse(res.Stdout, b)
}

// run runs b: packed, whole on the command line, when the host unpacks
// and it fits there (the server's LineLimit), else as it is (its script
// on stdin: a login shell reads its text otherwise). A packed command the
// host could not unpack runs again as it is, and the host is taken for
// one that cannot (a round trip lost once, never an answer).
func (f *Fallback) run(ctx context.Context, b *Batch) (ExecResult, error) {
	if !f.unpack.Load() {
		return f.h.Exec(ctx, b.Argv()...)
	}
	if argv, ok := PackCommand(b.Argv(), lineLimit(f.h)); ok {
		res, err := f.h.Exec(ctx, argv...)
		if err != nil || res.ExitCode != ExitUnpack || !bytes.Contains(res.Stderr, []byte("could not unpack")) {
			return res, err
		}
		f.unpack.Store(false)
		f.failed.Store(true)
		slog.Info("the host could not unpack the fallback's packed command; it goes as it is from now on", "err", cut(strings.TrimSpace(string(res.Stderr)), 512))
	}
	return f.h.Exec(ctx, b.Argv()...)
}

// parse is parseBatchOf of the fallback's answer, and keeps what its U
// record says.
func (f *Fallback) parse(out []byte, b *Batch) error {
	a, err := parseBatchOf(out, b, nil)
	if a.unpack.said {
		f.unpack.Store(a.unpack.ok && !f.failed.Load())
	}
	return err
}

// Unpacks says whether the host unpacks a packed command, as last learnt.
func (f *Fallback) Unpacks() bool { return f.unpack.Load() }

// SetUnpack says whether the host unpacks a packed command (a past run's
// word, kept per host: the cold poll goes packed too).
func (f *Fallback) SetUnpack(ok bool) { f.unpack.Store(ok && !f.failed.Load()) }

// RunEither runs b through the agent and fb by the fallback side by side:
// a cold poll of a host that had no agent last time costs the fallback's
// one exec, not the launcher's "none here" first and the exec after it.
// It says whether the agent answered (then b's handles hold the answer,
// else fb's), and each one's error.
func (f *Fallback) RunEither(ctx context.Context, ag *Agent, b, fb *Batch) (agent bool, agentErr, fallbackErr error) {
	fc := make(chan error, 1)
	fctx, stop := context.WithCancel(ctx) // the fallback ends once the agent answered
	defer stop()
	go func() { fc <- f.Run(fctx, fb) }()
	if _, aerr := ag.Run(ctx, b); aerr != nil {
		return false, aerr, <-fc
	}
	// the fallback's exec is ended (its channel closed, the host's script
	// cut at its next write), not left to read a first contact's every
	// category on the host for nothing
	return true, nil, nil
}
