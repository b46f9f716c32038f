// Package pipeline turns what remote reads and parse understands into one
// Snapshot (package snapshot): the job as the user needs to see it. Its
// Watcher composes the parts of a poll, each a package of its own
// (pipeline/counts, worklog, liveness, servers, vitals, events); the
// actions are pipeline/actions.
package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/counts"
	"github.com/synthwatch/synthwatch/pipeline/events"
	"github.com/synthwatch/synthwatch/pipeline/liveness"
	"github.com/synthwatch/synthwatch/pipeline/servers"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/pipeline/vitals"
	"github.com/synthwatch/synthwatch/pipeline/worklog"
	"github.com/synthwatch/synthwatch/remote"
)

// Options configure a Watcher.
type Options struct {
	Host      string // shown as the snapshot's host, e.g. root@10.1.230.174
	Root      string // the pipeline root on the host
	ServerURL string // default parse.DefaultServerURL (read through the SSH link)
	// ServerURLFrom says where ServerURL comes from ("flag --server-url",
	// "env SYNTHWATCH_SERVER_URL", "config.toml"): set so, it outranks
	// pipeline.toml's server and servers. "" or "default": those come first.
	ServerURLFrom string
	WorkerBin     string // the deployed binary (--worker-bin; "" as a launch finds it), the host's agent where it can be
	InstallAgent  bool   // copy the agent to the host's cache when it has none (not --no-install)
	WorkerLog     string // default <root>/logs/inference_all.log
	ServerLog     string // default <root>/logs/sglang_inference.log
	// Servers, when set, are every server on the host (ServerURL and
	// ServerLog then unused); else pipeline.toml's servers list, else the
	// one ServerURL
	Servers    []servers.Spec
	StallAfter time.Duration
	History    int     // samples kept per category for rates and sparklines
	LogLines   int     // lines of each log kept for display
	DiskFloor  float64 // the free fraction of the root's filesystem under which it is low; default 0.05
	// OnePoll: no poll follows the first (a one-shot status), so the tokens
	// of the records its counts did not read (a file over the count's
	// 256 KB read) are summed on the host at once, in the cold batch
	// (coldSumScript; an exec more after it for what that missed), rather
	// than by the next poll's batch: its figure is whole, not partial.
	OnePoll bool
	// SumWithin: the dashboard's time budget for each of the agent's
	// answers of those tokens (counts.SumWithin): summed over polls asked
	// at once, their progress shown (Category.TokensSumming). 0: whole,
	// as status, --follow and the fleet ask them.
	SumWithin time.Duration
	// HintPath: where the servers pipeline.toml named are kept between
	// runs (HintPath), so the first poll probes them beside its reads.
	HintPath string
	Now      func() time.Time
}

// SumWithin is the dashboard's Options.SumWithin.
const SumWithin = counts.SumWithin

// DefaultRoot is where the pipeline lives unless --root says otherwise.
const DefaultRoot = parse.DefaultRoot

func (o *Options) defaults() {
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	if o.ServerURL == "" {
		o.ServerURL = parse.DefaultServerURL
	}
	if o.WorkerLog == "" {
		o.WorkerLog = parse.Layout{Root: o.Root}.WorkerLog()
	}
	if o.ServerLog == "" {
		o.ServerLog = parse.Layout{Root: o.Root}.ServerLog()
	}
	if o.StallAfter <= 0 {
		o.StallAfter = 10 * time.Minute
	}
	if o.History <= 0 {
		o.History = 120
	}
	if o.LogLines <= 0 {
		o.LogLines = 5000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DiskFloor <= 0 || o.DiskFloor >= 1 {
		o.DiskFloor = vitals.DefaultDiskFloor
	}
}

// Watcher polls one host and keeps what it learnt between polls: counts,
// offsets, rates, stalls and the event timeline.
type Watcher struct {
	h            remote.Host
	fb           *remote.Fallback // reads a poll in one exec where no agent answers (a host with a link only)
	coldErr      error            // the last cold poll's batch error
	coldAsks     *remote.PollAsks // the last cold poll's tails and counts, as its batch answered them
	lastAsks     *remote.PollAsks // the last poll's (its reads from the batch and those not in it)
	agent        *remote.Agent    // answers steady polls in one request (a host with a link that can stream)
	agentErr     string           // the agent's last error, logged once
	readerLogged string
	reader       atomic.Value  // string: what answered the last poll's reads (Connection.Reader); Link reads it beside a poll
	hint         *ServersHint  // Options.HintPath's, as read at the start
	sumJobs      []*counts.Job // the token sums this poll's batch asks (request: capped for the fallback)
	noAgent      string        // the host had no agent of this protocol (for the hint)
	firstContact bool          // no hint of this host yet: its first cold poll asks the agent and the fallback at once
	coldSession  int           // the link session that had its cold poll
	o            Options

	mu        sync.Mutex
	cnt       *counts.Set // the categories: their counts and tokens, the manifest (pipeline/counts)
	polls     int
	answered  int            // polls the host answered: a failed first poll read nothing, so the next is still a first read
	polledAt  time.Time      // the last poll the host answered: the time its Snapshot is of
	sv        *servers.Set   // the host's servers: their logs, probes and states (pipeline/servers)
	log       *worklog.Log   // the worker log: its tail, the display rings, what it says (pipeline/worklog)
	live      *liveness.Live // the worker: worker.json, its process, the kill note (pipeline/liveness)
	timeline  *timeline.Timeline
	lastSnap  snapshot.Snapshot
	WorkerLog *snapshot.Ring // sanitised worker log lines for display (the logs part's)
	ServerLog *snapshot.Ring // sanitised server log lines for display (the logs part's)

	ev   *events.Recorder    // the timeline's part: the zone, the link's changes, sleeps, derived events' baselines (pipeline/events)
	vit  *vitals.Health      // the host's health: GPUs seen, the disk's points, the worker's CPU sample (pipeline/vitals)
	base *events.Baseline    // throughput against the night's median (pipeline/events)
	conn snapshot.Connection // the link as the last poll the host answered found it
}

// NewWatcher watches the pipeline at o.Root on h.
func NewWatcher(h remote.Host, o Options, tl *timeline.Timeline) *Watcher {
	o.defaults()
	if tl == nil {
		tl = timeline.New(500, "")
	}
	w := &Watcher{h: h, o: o, timeline: tl,
		log: worklog.New(o.WorkerLog, o.LogLines, o.OnePoll), ev: events.New(tl), base: events.NewBaseline(tl),
	}
	w.WorkerLog, w.ServerLog = w.log.Rings()
	if _, linked := h.(remote.Linked); linked {
		w.fb = remote.NewFallback(h)
		if w.agent = remote.NewAgent(h); w.agent != nil {
			w.agent.UseBinary(o.WorkerBin)
			w.agent.AutoInstall(o.InstallAgent)
		}
	}
	if o.HintPath != "" {
		w.hint = ReadServersHint(o.HintPath)
		switch {
		case w.fb == nil:
		case w.hint != nil:
			w.fb.SetUnpack(w.hint.Unpacks)
			if w.agent != nil {
				w.agent.SetPlatform(w.hint.Platform)
				w.agent.SetProgs(w.hint.AgentProgs)
			}
			if c, ok := h.(remote.CshLearner); ok && w.hint.LoginCsh {
				c.NoteLoginCsh()
			}
		default:
			// a first contact: most hosts unpack (base64 and gzip are in
			// coreutils, gzip and busybox), so the fallback goes packed at
			// once; one that cannot says so (exit 73), is read as it is
			// and remembered, a round trip lost once
			w.firstContact = true
			w.fb.SetUnpack(true)
		}
	}
	pane := int64(32 << 10)
	if o.OnePoll {
		pane = 4 << 10 // a one-shot status shows no pane
	}
	_, local := h.(remote.Local)
	w.cnt = counts.New(counts.Config{Layout: w.layout(), History: o.History, StallAfter: o.StallAfter, OnePoll: o.OnePoll, SumWithin: o.SumWithin, Timeline: tl, PromptsOnHost: !local})
	w.sv = servers.New(servers.Config{Host: h, Root: o.Root, Now: o.Now, History: o.History, Lines: w.ServerLog, Timeline: tl, Zone: w.ev.ServerTime, Pane: pane}, w.serverSpecs())
	w.vit = vitals.New(vitals.Config{Root: o.Root, Floor: o.DiskFloor, Timeline: tl})
	w.live = liveness.New(liveness.Config{Reads: w.h, Host: h, Layout: w.layout(), WorkerLog: o.WorkerLog, Timeline: tl})
	return w
}

// WaitInstall waits for the host agent's install that a poll started
// (a one-shot command's, so that the next finds the agent): its result,
// and whether one was started.
func (w *Watcher) WaitInstall(ctx context.Context) (remote.InstallResult, error, bool) {
	if w.agent == nil {
		return remote.InstallResult{}, nil, false
	}
	return w.agent.WaitInstall(ctx)
}

// Rescan makes the next poll scan the host's process table for a worker,
// whatever it knows: call it after a launch, resume or restart.
func (w *Watcher) Rescan() {
	w.mu.Lock()
	w.live.Rescan()
	w.mu.Unlock()
}

// layout is the host layout under the watched root.
func (w *Watcher) layout() parse.Layout { return parse.Layout{Root: w.o.Root} }

// Options returns the resolved options.
func (w *Watcher) Options() Options { return w.o }

// Timeline is the event timeline.
func (w *Watcher) Timeline() *timeline.Timeline { return w.timeline }

// Poll reads the host once (one concurrent batch) and returns the Snapshot.
// When the link came back while the reads failed on its loss (a wake, a
// reconnect), it reads again at once: a snapshot stale for a link that is
// up would read as fresh, and the next fresh one would wait a whole poll.
func (w *Watcher) Poll(ctx context.Context) snapshot.Snapshot {
	if d, ok := w.h.(interface{ Dialed() <-chan struct{} }); ok {
		// a dashboard's first poll starts as its link dials: it reads once
		// the dial ended, not fails at once and waits for the next beat
		// (0.8 s of a 50 ms link's first table); before the lock, so the
		// views' reads of the Watcher do not wait with it
		select {
		case <-d.Dialed():
		case <-ctx.Done():
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	snap, back := w.poll(ctx, false)
	if back {
		snap, _ = w.poll(ctx, true)
	}
	if w.agent != nil {
		w.agent.StartInstall() // the copy a poll asked for waits for its answer
	}
	return snap
}

// nth is this poll's number among those the host answered (1: the first
// read of the host, whose lines are history, however many polls failed
// before it: a dashboard polls while its link still dials).
func (w *Watcher) nth() int { return w.answered + 1 }

// poller is this poll's batch of tails and counters. A full poll reads
// what changes rarely too: prompts.jsonl and runs.jsonl (and runs.jsonl
// of a category whose records name a run it has not shown).
func (w *Watcher) poller(full bool) *remote.Poller {
	tails, counters := w.cnt.Files(full)
	return &remote.Poller{Tails: append(append([]*remote.Tail{w.log.Tail()}, w.sv.Tails()...), tails...), Counters: counters}
}

// stale is the last snapshot with the link down: figures kept, every
// category unknown, no ETA. Stale data never looks live. It projects: the
// poll folded the gap in the throughput before.
func (w *Watcher) stale(snap snapshot.Snapshot) snapshot.Snapshot {
	prev := w.lastSnap
	snapshot.StaleFigures(prev, &snap)
	snap.Server.Throughput = w.sv.Throughput()
	switch {
	case snap.Connection.LastContact == nil:
		snap.Warn(snapshot.WarnNoContact, "no contact with the host: never connected")
	case prev.Time.IsZero():
		snap.Warn(snapshot.WarnNoContact, "no contact with the host: nothing read yet")
	case w.ev.Waking():
		snap.Warn(snapshot.WarnNoContact, "no contact with the host since this machine woke: figures are from "+prev.Time.Local().Format("15:04:05")+", before the sleep")
	default:
		snap.Warn(snapshot.WarnNoContact, "no contact with the host: figures are from "+prev.Time.Local().Format("15:04:05"))
	}
	snap.Events = w.timeline.Recent(50)
	return snap
}

// Link is the link to the host as it stands now, read from the host (a
// remote.Linked, such as SSH) without a round trip; a host without a link
// (a local root) is always there. It is cheap: the dashboard asks it on
// every tick, between polls.
func (w *Watcher) Link() snapshot.Connection {
	l, ok := w.h.(remote.Linked)
	if !ok {
		now := w.o.Now()
		return snapshot.Connection{State: snapshot.LinkLocal, LastContact: &now}
	}
	st := l.State()
	c := snapshot.Connection{State: linkPhase(st.Phase), RTTms: float64(st.RTT.Microseconds()) / 1000, Error: st.Err, Cause: st.Cause, Drops: st.Drops}
	c.Reader, _ = w.reader.Load().(string)
	c.AgentProtocol = agentProtocol(c.Reader)
	if st.Phase != remote.Connected {
		c.Attempt = st.Attempt
		if !st.NextTry.IsZero() && st.NextTry.After(w.o.Now()) {
			t := st.NextTry.UTC()
			c.NextTry = &t
		}
	}
	if !st.LastContact.IsZero() {
		t := st.LastContact.UTC()
		c.LastContact = &t
	}
	return c
}

// linkPhase is remote's phase as the Snapshot names it.
func linkPhase(p remote.Phase) snapshot.LinkPhase {
	switch p {
	case remote.Connecting:
		return snapshot.LinkConnecting
	case remote.Connected:
		return snapshot.LinkConnected
	case remote.Reconnecting:
		return snapshot.LinkReconnecting
	case remote.Failed:
		return snapshot.LinkFailed
	}
	return snapshot.LinkClosed
}

// serverSpecs are the servers to watch (servers.Specs): a Watcher's, for
// it composes the options, the counts' manifest and the hint kept between
// runs. The manifest is pipeline.toml once read, else the hint's; one
// that does not parse lists none (those configured stand).
func (w *Watcher) serverSpecs() []servers.Spec {
	man, read := w.cnt.Manifest()
	if !read && w.cnt.ManifestErr() == nil && w.hint != nil {
		man = parse.Manifest{Server: w.hint.Server, Servers: w.hint.Servers}
	}
	return servers.Specs(servers.Choice{Servers: w.o.Servers, ServerURL: w.o.ServerURL, ServerURLFrom: w.o.ServerURLFrom, ServerLog: w.o.ServerLog}, man)
}

// writeServersHint keeps the servers pipeline.toml named, and what the
// cold reads learnt of the host (no agent, unpacking, the agent's
// platform and programs), when they differ
// from the hint (ServersHint.write): a Watcher's, for the hint gathers
// the counts' manifest and the reader's findings.
func (w *Watcher) writeServersHint() {
	man, read := w.cnt.Manifest()
	have := ServersHint{Server: man.Server, Servers: man.Servers, NoAgent: w.noAgent, Unpacks: w.fb != nil && w.fb.Unpacks()}
	if w.agent != nil {
		have.Platform, have.AgentProgs = w.agent.Platform(), w.agent.Progs()
	}
	if c, ok := w.h.(remote.CshLearner); ok {
		have.LoginCsh = c.LoginCsh()
	}
	if !read && w.hint != nil { // pipeline.toml not read yet: its servers as the hint had them
		have.Server, have.Servers = w.hint.Server, w.hint.Servers
	}
	w.hint = w.hint.write(w.o.HintPath, have)
}

// noteUnpack keeps, for the hint, what the fallback's last answer said of
// unpacking, when it differs from the hint's.
func (w *Watcher) noteUnpack() {
	if w.fb != nil && w.fb.Unpacks() != (w.hint != nil && w.hint.Unpacks) {
		w.writeServersHint()
	}
}
