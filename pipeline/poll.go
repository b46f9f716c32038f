package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/counts"
	"github.com/synthwatch/synthwatch/pipeline/events"
	"github.com/synthwatch/synthwatch/pipeline/liveness"
	"github.com/synthwatch/synthwatch/pipeline/servers"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/vitals"
	"github.com/synthwatch/synthwatch/remote"
)

// A poll walks down the parts and back to the Watcher once: each part
// says what it asks (plan), the asks go in one request beside the
// servers' probes (ask), each part reads its handles' answers or reads
// for itself (read), folds its share (fold) and judges it (judge,
// derive.go); project makes the Snapshot.

// poll is one attempt of Poll; last: no other attempt follows, so a failed
// one returns the stale snapshot whatever the link is now. back: this
// attempt failed on a link that is up again (its snapshot is not to be used).
func (w *Watcher) poll(ctx context.Context, last bool) (_ snapshot.Snapshot, back bool) {
	now := w.o.Now()
	cold, viaAgent := w.cold(), w.viaAgent()
	ask := w.plan(now, cold, viaAgent)
	w.polls++
	pr := w.probe(ctx) // beside the reads, never after them: a cold start waits for the slower of the two
	defer pr.end()
	w.cnt.CountOnHost(viaAgent)
	asks, reader := w.ask(ctx, cold, viaAgent, &ask)
	discErr := w.discover(ctx, ask.full, asks, pr)
	r := w.read(ctx, now, ask, asks)
	asks.poll.Release() // read: what stays of them is their counts (lastAsks, coldAsks)
	pr.wg.Wait()
	w.ev.FoldZone(r.zone, r.zoneErr, ask.zone)

	conn := w.Link()
	w.ev.NoteConnection(conn, now, w.h)
	// a link that dropped during the batch fails its reads with the transport's error, not ErrDisconnected
	if errors.Is(discErr, remote.ErrDisconnected) || errors.Is(r.res.Tails[0].Err, remote.ErrDisconnected) || r.live.LinkLost() || !conn.State.Up() {
		return w.lost(ctx, r.res, now, last)
	}
	w.polledAt, w.conn = now, conn
	w.fold(ctx, r, now, ask.tokJobs, asks, reader)
	w.sv.FoldReads(pr.reads)
	w.judge(pr.reads, r.vit, now)
	w.ev.LogsRead()
	w.answered++
	w.lastSnap = w.project()
	return w.lastSnap, false
}

// plan is what each part asks of this poll besides the files: the counts'
// token sums and spans (prompts.jsonl and new categories change rarely:
// a full poll reads them), the zone once per connection, the vitals at
// most every 10 s.
func (w *Watcher) plan(now time.Time, cold, viaAgent bool) batchAsk {
	ask := batchAsk{full: w.polls%30 == 0 || w.cnt.Len() == 0, steady: viaAgent}
	lastReader, _ := w.reader.Load().(string)
	// the agent answered the last poll: what the fallback's awk summed before it (a first screen while the agent installed) is summed again
	ask.tokJobs, ask.spans = w.cnt.Plan(!viaAgent && w.linked(), viaAgent && !cold && agentProtocol(lastReader) != "")
	ask.zone = w.ev.ZoneDue()
	ask.vit, ask.disk = w.vit.Due(now)
	ask.vitPid = w.live.PID()
	return ask
}

// probes are a poll's probes of the servers, run beside the host's reads.
type probes struct {
	wg    sync.WaitGroup
	reads []servers.Read
	drop  context.CancelFunc // ends the probes of a guess
}

// probe starts the servers' probes: those configured (or the hint's)
// until pipeline.toml is read.
func (w *Watcher) probe(ctx context.Context) *probes {
	if !w.sv.Settled {
		w.sv.SetSpecs(w.serverSpecs()) // as configured, until pipeline.toml is read (discover)
	}
	pr := &probes{}
	guess, drop := context.WithCancel(ctx)
	pr.drop = drop
	pr.start(guess, w.sv, w.polls)
	return pr
}

func (pr *probes) start(ctx context.Context, sv *servers.Set, n int) {
	pr.wg.Add(1)
	go func() { defer pr.wg.Done(); pr.reads = sv.Probe(ctx, n) }()
}

// end ends a guess's probes and waits for them.
func (pr *probes) end() {
	pr.drop()
	pr.wg.Wait()
}

// ask reads this poll in one request (the agent's, or the fallback's
// exec) where the host has a link, beside the probes; its handles go to
// the parts that asked them. None (a local root): each part reads for
// itself. reader names what answered (Connection.Reader).
func (w *Watcher) ask(ctx context.Context, cold, viaAgent bool, ask *batchAsk) (*pollAsks, string) {
	reader := "file by file" // unless the agent or the fallback answers
	asks := &pollAsks{}      // none: each part reads for itself
	if cold || w.linked() {
		var r string
		r, asks = w.request(ctx, cold, viaAgent, *ask)
		ask.tokJobs = w.sumJobs // the fallback's share when the agent failed
		if r != "" {
			reader = r
		}
	}
	w.reader.Store(reader) // once a poll: Link, read beside it, never sees a guess
	if reader != w.readerLogged {
		w.readerLogged = reader
		slog.Info("the host's reads", "host", w.o.Host, "by", snapshot.Connection{Reader: reader, AgentProtocol: agentProtocol(reader)}.ReaderText())
	}
	return asks, reader
}

// discover has the counts read the manifest and the category folders on
// a full poll; until pipeline.toml is read, the servers it names are
// probed instead of the guess.
func (w *Watcher) discover(ctx context.Context, full bool, asks *pollAsks, pr *probes) error {
	var err error
	if full {
		var parsed bool
		if parsed, err = w.cnt.Discover(ctx, w.h, asks.find); parsed {
			w.writeServersHint()
		}
	}
	if w.sv.Settled {
		return err
	}
	// the first poll: pipeline.toml may list other servers; probe those
	w.sv.Settled = w.cnt.Settled() // a bad manifest lists no servers: those configured stand
	if specs := w.serverSpecs(); !w.sv.SpecsAre(specs) {
		pr.end() // pipeline.toml names others: a wedged guess (a stale hint) is not waited for (3 s)
		w.sv.SetSpecs(specs)
		pr.start(ctx, w.sv, w.polls)
	}
	return err
}

// reading is what a poll's reads brought, each part's share.
type reading struct {
	res     remote.PollResult // the tails and counters
	live    liveness.Reading
	zone    *time.Location
	zoneErr error
	vit     vitals.Reading
	sums    counts.Sums
	spans   counts.Spans
}

// read has each part read its share side by side, from its handles in
// the batch or, where the batch did not answer them, from the host.
func (w *Watcher) read(ctx context.Context, now time.Time, ask batchAsk, asks *pollAsks) reading {
	var r reading
	p := w.poller(ask.full)
	p.Asks, w.lastAsks = asks.poll, asks.poll // each tail and counter reads its handle's answer, the host for the rest
	steps := []struct {
		due  bool
		read func()
	}{
		{true, func() { r.res = p.Poll(ctx, w.h) }},
		{true, func() { r.live = w.live.Read(ctx, now, w.nth(), asks.live) }},
		{len(ask.tokJobs) > 0, func() { r.sums = counts.ReadSums(ctx, w.h, ask.tokJobs, asks.tokens) }},
		{ask.spans != nil, func() { r.spans = counts.ReadSpans(ctx, w.h, ask.spans, asks.spans) }},
		{ask.vit, func() { r.vit = w.vit.Read(ctx, w.h, ask.vitPid, ask.disk, asks.vit) }},
		{ask.zone, func() { r.zone, r.zoneErr = events.ReadZone(ctx, w.h, asks.zone) }},
	}
	var wg sync.WaitGroup
	for _, s := range steps {
		if s.due {
			wg.Add(1)
			go func() { defer wg.Done(); s.read() }()
		}
	}
	wg.Wait()
	p.Asks = nil
	return r
}

// fold hands each part its share of what the poll read, in the order
// they need each other: the tails (the logs, runs.jsonl), worker.json and
// the process, the counts, their spans and tokens.
func (w *Watcher) fold(ctx context.Context, r reading, now time.Time, jobs []*counts.Job, asks *pollAsks, reader string) {
	w.foldTails(r.res, now)
	if st := w.live.FoldJSON(r.live.WorkerJSON()); st != nil {
		w.cnt.NoteWorkerJSON(st)
	}
	w.live.Fold(r.live, now)
	w.live.NoteGrowth(r.res, w.cnt.GrewIn, w.nth())
	w.cnt.Fold(r.res, now, w.live.JSON())
	w.cnt.FoldSpans(r.spans, w.ev.HostZone(), now)
	w.cnt.FoldTokens(r.res, jobs, r.sums)
	w.cnt.SumHoles(ctx, w.hostFor(reader), asks.coldSum, strings.HasPrefix(reader, "fallback"))
}

// lost is a poll whose link dropped during its reads: their lines are
// folded (a line skipped is a line lost), and, unless the link is back
// for another attempt (back), the last figures are shown stale.
func (w *Watcher) lost(ctx context.Context, res remote.PollResult, now time.Time, last bool) (_ snapshot.Snapshot, back bool) {
	w.vit.ReadAgain() // read the vitals again as soon as the link is back
	w.foldTailLines(res, now, false)
	w.cnt.DropTokenJobs()
	if !last && ctx.Err() == nil && w.Link().State == snapshot.LinkConnected {
		return snapshot.Snapshot{}, true
	}
	w.sv.Gap() // no sample: a gap in the sparkline, not a zero
	// stamped when made: a poll held by a black hole started long ago
	snap := snapshot.Snapshot{Schema: 1, Time: w.o.Now().UTC(), Host: w.o.Host, Root: w.o.Root, Warnings: []string{}, Connection: w.Link()}
	if snap.Connection.State == snapshot.LinkConnected { // back since: these figures still predate it
		snap.Connection.State = snapshot.LinkReconnecting
	}
	return w.stale(snap), false
}
