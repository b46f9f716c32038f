package liveness

import (
	"context"
	"errors"
	"io/fs"
	"strconv"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// WarnJSON says when the last poll could not read worker.json.
func (l *Live) WarnJSON(s *snapshot.Snapshot) {
	if err := l.jsonErr; err != nil && !errors.Is(err, fs.ErrNotExist) && remote.IsFileError(err) {
		s.Warn(snapshot.WarnUnreadable, "cannot read "+remote.FileErrText(l.lay.WorkerJSON(), err))
	}
}

// Asks are liveness's handles in a poll's batch (Ask).
type Asks struct {
	wjson, note, boot *remote.CatAsk
	cmdline, stat     *remote.CatAsk // of pid: the worker seen alive last poll
	pid               int
	// the batch's Procs op and its RealPath of the root, which the
	// batch's maker adds (it knows the patterns: Reader.PatternsAt)
	Procs *remote.ProcsAsk // worker.json's process, or the scan and its finds
	Real  *remote.PathAsk  // the root, symlinks resolved
}

// Ask adds liveness's reads to a poll's batch: worker.json, the kill note,
// the boot time until known, the /proc entries of the worker seen alive.
func (l *Live) Ask(b *remote.Batch) Asks {
	a := Asks{wjson: b.Cat(l.lay.WorkerJSON(), 4<<20), note: b.Cat(l.lay.KillNote(), 4096)}
	if !l.bootRead {
		a.boot = b.Cat("/proc/stat", 64<<10)
	}
	if cur := l.cur; cur != nil {
		dir := "/proc/" + strconv.Itoa(cur.pid)
		a.pid, a.cmdline, a.stat = cur.pid, b.Cat(dir+"/cmdline", 64<<10), b.Cat(dir+"/stat", 4096)
	}
	return a
}

// ReadCat is c's answer, or, when the batch did not answer it (nil: not
// asked, or no batch), a read of its own.
func ReadCat(ctx context.Context, h remote.Host, c *remote.CatAsk, path string, max int) ([]byte, error) {
	if r, ok := c.Result(); ok {
		return r.Data, r.Err
	}
	return h.ReadAt(ctx, path, 0, max)
}
