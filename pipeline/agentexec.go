package pipeline

import (
	"context"
	"errors"
	"strings"

	"github.com/synthwatch/synthwatch/remote"
)

// hostFor is the host the counts' execs after the batch run on (SumHoles):
// through the Go agent when it read this poll, so a sum asked then (a
// budget's tokens cut at the first table's time) is Go's over the kept
// sums, not the host's awk over every byte; else the host itself.
func (w *Watcher) hostFor(reader string) remote.Host {
	if w.agent == nil || !strings.HasPrefix(reader, "go agent") {
		return w.h
	}
	return agentHost{Host: w.h, agent: w.agent}
}

// agentHost runs Exec as a batch of one exec through the agent; an agent
// that fails leaves it to the host, as a poll whose agent failed does.
type agentHost struct {
	remote.Host
	agent *remote.Agent
}

func (x agentHost) Exec(ctx context.Context, argv ...string) (remote.ExecResult, error) {
	b := &remote.Batch{}
	ask := b.Exec(argv...)
	_, err := x.agent.Run(ctx, b)
	if r, ok := ask.Result(); ok && err == nil {
		return r, nil
	}
	if ctx.Err() != nil {
		return remote.ExecResult{}, errors.Join(err, ctx.Err())
	}
	return x.Host.Exec(ctx, argv...)
}
