package pipeline

import (
	"context"
	"strconv"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// cold says whether this poll starts from nothing on its link: the first
// one, or the first since the link came back (kept handles died with the
// old session). It is then read in one exec (prefetch), not request by request.
func (w *Watcher) cold() bool {
	l, ok := w.h.(remote.Linked)
	if w.pre == nil || !ok {
		return false
	}
	st := l.State()
	if st.Phase != remote.Connected || st.Sessions == w.coldSession {
		return false
	}
	w.coldSession = st.Sessions
	return true
}

// prefetch arms w.pre with one exec that reads what this poll is going to
// ask: the manifest, the category folders (all of them, as a first
// attach, when none is known yet), the logs, worker.json and the kill
// note, the worker's /proc entries (or the scan for a writer), the
// host's zone and its vitals. What it did not foresee, the poll reads as
// usual. Its error only costs the round trips it was to save.
func (w *Watcher) prefetch(ctx context.Context, full, zone, vit bool, vitPid int, disk bool) {
	w.coldErr = w.pre.Load(ctx, w.batchFor(ctx, full, zone, vit, vitPid, disk))
}

// batchFor is prefetch's batch.
func (w *Watcher) batchFor(ctx context.Context, full, zone, vit bool, vitPid int, disk bool) *remote.Batch {
	b := &remote.Batch{}
	l := w.layout()
	if !w.haveMan {
		b.Cat(l.Manifest(), 1<<20)
	}
	if full {
		g := parse.Layout{Root: globEscape(w.o.Root)}
		b.Glob(g.Prompts("*"), l.Prepared(), parse.PromptsFile)
		b.Glob(g.Raw("*"), l.Prepared(), parse.RawFile)
	}
	p := w.poller(full)
	if len(w.cats) == 0 {
		c := w.newCat("")
		b.Each(l.Prepared(), []*remote.Tail{c.runs}, []*remote.Counter{c.raw, c.errs, c.prompts})
	}
	for _, t := range p.Tails {
		b.Tail(t)
	}
	for _, c := range p.Counters {
		b.Count(c)
	}
	b.Cat(l.WorkerJSON(), 4<<20)
	b.Cat(l.KillNote(), 4096)
	if !w.live.bootRead {
		b.Cat("/proc/stat", 64<<10)
	}
	if cur := w.live.cur; cur != nil {
		dir := "/proc/" + strconv.Itoa(cur.pid)
		b.Cat(dir+"/cmdline", 64<<10)
		b.Cat(dir+"/stat", 4096)
	}
	b.RealPath(w.o.Root)
	b.Procs(l.WorkerJSON(), remote.HoldersArgv(w.procs.patternsAt(ctx, w.procs.knownReal(), w.o.WorkerLog, nil)))
	if zone {
		b.Exec("sh", "-c", zoneScript)
	}
	if vit {
		b.Exec(w.vitalsArgv(vitPid, disk)...)
	}
	return b
}

// ColdStats says how the last cold poll went: questions answered from its
// batch, questions that went to the host, and the batch's error.
func (w *Watcher) ColdStats() (hits, misses int64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pre == nil {
		return 0, 0, nil
	}
	h, m := w.pre.Counts()
	return h, m, w.coldErr
}
