package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ctrl+c during an action cancels its context, and the error says what
// the host may have done anyway; an action that fails on its own keeps
// its error as it is.
func TestInterruptSaysWhatTheHostMayHaveDone(t *testing.T) {
	err := interruptible(context.Background(), maybeKilled, func(ctx context.Context) error {
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			return fmt.Errorf("send SIGINT: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kill 42: %w", ctx.Err())
		case <-time.After(10 * time.Second):
			return errors.New("SIGINT did not cancel the action's context")
		}
	})
	if err == nil || !strings.HasPrefix(err.Error(), "interrupted: "+maybeKilled+": kill 42:") || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted kill: %v", err)
	}
	boom := errors.New("boom")
	if err := interruptible(context.Background(), maybeKilled, func(context.Context) error { return boom }); err != boom {
		t.Fatalf("a failure of its own: %v", err)
	}
}
