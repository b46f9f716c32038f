package worker

import (
	"context"
	"sync"
	"time"
)

// gate holds every request while the server is down, and polls /health
// until it answers, so that a dead server does not burn through prompts.
type gate struct {
	mu     sync.Mutex
	up     chan struct{} // closed while the server is believed up
	check  func(context.Context) error
	onDown func(err error)
	onUp   func(down time.Duration)
	every  time.Duration
}

func newGate(check func(context.Context) error, onDown func(error), onUp func(time.Duration)) *gate {
	up := make(chan struct{})
	close(up)
	return &gate{up: up, check: check, onDown: onDown, onUp: onUp, every: time.Second}
}

// Wait blocks while the server is down.
func (g *gate) Wait(ctx context.Context) error {
	g.mu.Lock()
	up := g.up
	g.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// IsDown reports whether requests are being held.
func (g *gate) IsDown() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.up:
		return false
	default:
		return true
	}
}

// Down closes the gate (once) and polls /health until the server answers
// or ctx ends.
func (g *gate) Down(ctx context.Context, cause error) {
	g.mu.Lock()
	select {
	case <-g.up:
	default:
		g.mu.Unlock()
		return // already down and polling
	}
	g.up = make(chan struct{})
	up := g.up
	g.mu.Unlock()
	g.onDown(cause)
	go func() {
		start := time.Now()
		t := time.NewTicker(g.every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				close(up) // let waiters see their own cancelled context
				return
			case <-t.C:
			}
			if g.check(ctx) == nil {
				close(up)
				g.onUp(time.Since(start))
				return
			}
		}
	}()
}

// Probe checks the server once and closes the gate if it does not answer.
func (g *gate) Probe(ctx context.Context) {
	if err := g.check(ctx); err != nil {
		g.Down(ctx, err)
	}
}
