package worker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// complete sends one prompt until it succeeds, fails for good, or the run
// is cancelled. A server that refuses connections holds every request at the
// gate without spending attempts. Every attempt has its own rid, so a retry
// never meets the server's memory of the last one.
func (w *Worker) complete(reqCtx context.Context, c Category, it item) outcome {
	var last error
	var wasted int64 // tokens streamed by this prompt's failed attempts
	for attempt := 1; ; {
		if w.gate.Wait(reqCtx) != nil {
			return outcome{item: it, abandoned: true, retried: wasted}
		}
		start := time.Now()
		ctx, cancel := reqCtx, context.CancelFunc(func() {})
		if w.cfg.RequestTimeout > 0 {
			ctx, cancel = context.WithTimeout(reqCtx, w.cfg.RequestTimeout)
		}
		comp, err := w.client.Complete(ctx, w.rids.next(c.Name, it.id), it.prompt, c.MaxTokens, c.Sampling)
		cancel()
		if err == nil {
			w.systemic.ok()
			return outcome{item: it, comp: comp, latency: time.Since(start), attempts: attempt, retried: wasted}
		}
		if reqCtx.Err() != nil { // the run stops: what it streamed is aborted
			return outcome{item: it, abandoned: true, retried: wasted, aborted: int64(comp.Streamed)}
		}
		wasted += int64(comp.Streamed)
		switch classify(err) {
		case permanent:
			w.systemic.ok()
			return outcome{item: it, err: err, attempts: attempt, retried: wasted}
		case serverDown:
			w.gate.Down(reqCtx, err)
			continue
		case yielded:
			if w.yield(reqCtx, c, err) != nil {
				return outcome{item: it, abandoned: true, retried: wasted}
			}
			continue
		case systemic:
			if w.systemic.fail(it.id) {
				w.stopRun(systemicError(err, w.client.apiKey != ""))
				return outcome{item: it, abandoned: true, retried: wasted}
			}
		}
		last = err
		w.failedAttempts.Add(1)
		if attempt >= w.cfg.MaxAttempts {
			if herr := w.client.Healthy(reqCtx); herr != nil && reqCtx.Err() == nil {
				w.gate.Down(reqCtx, herr) // the server is sick, not the prompt: wait, then start over
				attempt = 1
				continue
			}
			return outcome{item: it, err: fmt.Errorf("gave up after %d attempts: %w", attempt, last), attempts: attempt, retried: wasted}
		}
		if sleepCtx(reqCtx, backoff(attempt)) != nil {
			return outcome{item: it, abandoned: true, retried: wasted}
		}
		attempt++
	}
}

// backoff is exponential from 500 ms, capped at 30 s, with jitter in [d/2, d].
func backoff(attempt int) time.Duration {
	d := 500 * time.Millisecond << min(attempt-1, 6)
	d = min(d, 30*time.Second)
	return d/2 + rand.N(d/2+1)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
