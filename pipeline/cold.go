package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/counts"
	"github.com/synthwatch/synthwatch/pipeline/events"
	"github.com/synthwatch/synthwatch/pipeline/liveness"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// cold says whether this poll starts from nothing on its link: the first
// one, or the first since the link came back (kept handles died with the
// old session). It is then read in one exec (request), not op by op.
func (w *Watcher) cold() bool {
	l, ok := w.h.(remote.Linked)
	if w.fb == nil || !ok {
		return false
	}
	st := l.State()
	if st.Phase != remote.Connected || st.Sessions == w.coldSession {
		return false
	}
	w.coldSession = st.Sessions
	return true
}

// batchAsk is what a poll's batch is to read besides the files.
type batchAsk struct {
	full, zone, vit bool
	vitPid          int
	disk            bool
	tokJobs         []*counts.Job
	steady          bool     // through the agent
	spans           []string // the records' span to ask for (counts.Set.SpanArgv), nil: none
}

// request reads this poll with one request to the Go agent (viaAgent) or,
// where none answers, one exec of the fallback (remote/host/fallback.sh),
// that reads what this poll is going to ask: the manifest, the category
// folders (all of them, as a first attach, when none is known yet), the
// logs, worker.json and the kill note, the worker's /proc entries (or the
// scan for a writer), the host's zone, its vitals and the token sums.
// What its handles do not hold, each part reads for itself. Its error
// only costs the round trips it was to save.
//
// The cold poll goes to the agent too: a first screen of 10,000
// categories forks a handful of processes, not a few per category (the
// fallback is shell), and the next poll finds the agent running. With no
// agent on the host, every poll is read by the fallback while the agent
// is installed beside it (the header names the install's progress).
//
// It returns what answered ("" if nothing did: the poll reads file by
// file), and the handles of the batch that answered, which the poll hands
// to the parts that asked them.
func (w *Watcher) request(ctx context.Context, cold, viaAgent bool, ask batchAsk) (string, *pollAsks) {
	w.sumJobs = ask.tokJobs
	if viaAgent && cold && (w.firstContact || w.hint != nil && w.hint.NoAgent == remote.AgentProto) {
		// a host seen for the first time most often has no agent yet
		// (the dashboard installs it then), like one that had none last
		// time: the fallback beside the launcher, not after its "none here"
		w.firstContact = false
		return w.requestEither(ctx, ask)
	}
	if viaAgent {
		b, asks := w.batchFor(ctx, ask)
		_, err := w.agent.Run(ctx, b)
		if cold {
			w.coldErr, w.coldAsks = err, asks.poll
		}
		w.noteAgent(err)
		switch {
		case err == nil:
			w.agentErr = ""
			return agentReader(w.agent.Kind()), asks
		case errors.Is(err, remote.ErrNoAgent):
			slog.Info("no agent on the host; the fallback reads", "host", w.o.Host, "why", err)
		case err.Error() != w.agentErr:
			w.agentErr = err.Error()
			slog.Warn("the host agent failed; this poll reads the files itself", "host", w.o.Host, "err", err)
		}
		if ctx.Err() != nil {
			return "", asks
		}
		// still one exec: the fallback, counting as it does, and summing
		// its slice of the holes only (the jobs were planned for the agent)
		ask.steady = false
		ask.tokJobs = counts.CapJobs(ask.tokJobs, counts.FallbackSumPerPoll)
		w.sumJobs = ask.tokJobs
		w.cnt.CountOnHost(false)
	}
	b, asks := w.batchFor(ctx, ask)
	w.coldErr = w.fb.Run(ctx, b)
	if cold {
		w.coldAsks = asks.poll
	}
	w.noteUnpack()
	if w.coldErr == nil {
		return w.fallbackReader(), asks
	}
	return "", asks
}

// requestEither is a cold poll of a host that had no agent of this
// protocol last time (the hint): the agent's launcher and the fallback
// side by side, the agent's answer taken when it answered. Each batch is
// planned for its reader (the counts' thresholds, the token sums), and the
// counts are left as the one that answered planned them.
func (w *Watcher) requestEither(ctx context.Context, ask batchAsk) (string, *pollAsks) {
	ab, aasks := w.batchFor(ctx, ask)
	fask := ask
	fask.steady, fask.tokJobs = false, nil // a first poll knows no holes yet
	w.cnt.CountOnHost(false)
	fb, fasks := w.batchFor(ctx, fask)
	agentOK, aerr, ferr := w.fb.RunEither(ctx, w.agent, ab, fb)
	w.noteAgent(aerr)
	if agentOK {
		w.cnt.CountOnHost(true)
		w.coldErr, w.agentErr, w.coldAsks = nil, "", aasks.poll
		return agentReader(w.agent.Kind()), aasks
	}
	if !errors.Is(aerr, remote.ErrNoAgent) && aerr.Error() != w.agentErr {
		w.agentErr = aerr.Error()
		slog.Warn("the host agent failed; this poll reads the files itself", "host", w.o.Host, "err", aerr)
	}
	w.sumJobs = nil
	w.noteUnpack()
	w.coldAsks = fasks.poll
	if w.coldErr = ferr; ferr == nil {
		return w.fallbackReader(), fasks
	}
	return "", fasks
}

// noteAgent keeps, for the hint, whether the host had an agent of this
// protocol: none (ErrNoAgent) makes the next cold start read by the
// fallback beside the launcher, not after it.
func (w *Watcher) noteAgent(err error) {
	switch {
	case err == nil:
		w.noAgent = ""
	case errors.Is(err, remote.ErrNoAgent) && !w.agent.Usable():
		w.noAgent = remote.AgentProto // none this session
	case errors.Is(err, remote.ErrNoAgent):
		// the told platform's agent did not start: the session stays
		// usable, and the hint loses the platform (uname finds the agent)
	default:
		return
	}
	w.writeServersHint()
}

// fallbackReader names the fallback as Connection.Reader does, with why no
// agent read and the install's progress (remote.Agent.Kind) when known.
func (w *Watcher) fallbackReader() string {
	if w.agent != nil {
		if why, ok := strings.CutPrefix(w.agent.Kind(), "fallback ("); ok {
			return "fallback (" + parse.SanitizeString(why)
		}
	}
	return "fallback"
}

// agentReader names an agent (remote.Agent.Kind) as Connection.Reader does.
func agentReader(kind string) string {
	if p, ok := strings.CutPrefix(kind, "go "); ok {
		return "go agent " + parse.SanitizeString(p)
	}
	return parse.SanitizeString(kind)
}

// agentProtocol is the protocol of the agent a Reader names, if one read.
func agentProtocol(reader string) string {
	if strings.HasPrefix(reader, "go agent") {
		return remote.AgentProto
	}
	return ""
}

// viaAgent: this poll goes to the agent, cold or steady.
func (w *Watcher) viaAgent() bool {
	return w.linked() && w.agent.Usable()
}

// linked: the host is a link an agent may serve; where no agent runs this
// session (viaAgent is false), every poll is read by the fallback.
func (w *Watcher) linked() bool {
	l, ok := w.h.(remote.Linked)
	return w.agent != nil && w.fb != nil && ok && l.State().Phase == remote.Connected
}

// pollAsks are the handles of one poll's batch, each read by the part
// that asked it once the batch ran (an unanswered one: the part reads
// for itself). nil: no batch ran (--local, a host with no link).
type pollAsks struct {
	find    counts.FindAsks  // counts: the manifest and the category folders
	coldSum *remote.ExecAsk  // counts: the holes' sums of a one-shot status
	tokens  *remote.ExecAsk  // counts: the holes' sums (sumOnHost)
	spans   *remote.ExecAsk  // counts: the records' spans (counts.ReadSpans)
	poll    *remote.PollAsks // the Poller: the tails' and counters' answers
	live    liveness.Asks    // liveness: worker.json, the kill note, /proc
	zone    *remote.ExecAsk  // events: the host's zone
	vit     *remote.ExecAsk  // vitals
}

// batchFor is request's batch, and its handles.
func (w *Watcher) batchFor(ctx context.Context, ask batchAsk) (*remote.Batch, *pollAsks) {
	full, zone, vit, vitPid, disk := ask.full, ask.zone, ask.vit, ask.vitPid, ask.disk
	b := &remote.Batch{Digests: ask.steady} // the agent digests a log's history; the fallback reads it
	asks := &pollAsks{poll: b.PollAsks()}
	l := w.layout()
	asks.find = w.cnt.AskFind(b, full)
	p := w.poller(full)
	// the holes of a first attach summed in the same answer by the agent
	// (by the fallback it counts only): whole for a one-shot status; for a
	// dashboard's first table within counts.FirstSumWithin, the rest with
	// the poll right after (tui: a first answer short of its tokens asks
	// the next at once)
	asks.coldSum = w.cnt.AskEach(b, ask.steady)
	for _, t := range p.Tails {
		b.Tail(t)
	}
	w.cnt.AskCounts(b, p.Counters, ask.steady)
	asks.live = w.live.Ask(b)
	asks.live.Real = b.RealPath(w.o.Root)
	asks.live.Procs = b.Procs(l.WorkerJSON(), remote.HoldersArgv(w.live.Reader().PatternsAt(ctx, w.live.Reader().KnownReal(), w.o.WorkerLog, nil)))
	if zone {
		asks.zone = b.Exec(events.ZoneArgv...)
	}
	if vit {
		asks.vit = b.Exec(w.vit.Argv(vitPid, disk)...)
	}
	asks.tokens = w.cnt.AskSums(b, ask.tokJobs, ask.steady)
	if ask.spans != nil {
		asks.spans = b.Exec(ask.spans...)
	}
	return b, asks
}

// ColdStats says how the last cold poll went: the tails' and counts'
// reads its batch held, those that went to the host, and the batch's error.
func (w *Watcher) ColdStats() (hits, misses int64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h, m := w.coldAsks.Counts()
	return h, m, w.coldErr
}

// slowReaderAt: from this many categories, a host read by the shell (a few
// processes per category and file each poll: some 15 ms a category) is
// told how to have the Go agent read it (a handful a poll, whatever their
// number: BenchmarkFirstScreen10k, 2 s for 10,000 against minutes).
const slowReaderAt = 500

// warnSlowReader says so on a host with many categories and no agent of
// ours: the answer to a slow first screen is to deploy it.
func (w *Watcher) warnSlowReader(snap *snapshot.Snapshot) {
	r := snap.Connection.Reader
	if w.cnt.Len() < slowReaderAt || r == "" || strings.HasPrefix(r, "go agent") {
		return
	}
	snap.Warn(snapshot.WarnSlowReader, fmt.Sprintf("%d categories read by the %s (no synthwatch on the host): each poll forks a few processes per category; `synthwatch deploy %s` installs the Go agent, which reads them in one process",
		w.cnt.Len(), r, w.o.Host))
}
