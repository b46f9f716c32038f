package remote

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/synthwatch/synthwatch/parse"
)

// Poller reads many tails and counters in one batch. Every stat goes out at
// once over the one SFTP session, and on a Keeper host so do reads of the
// files that grew lately (read ahead through kept handles), so a poll of a
// running job costs one round trip. Whatever the read-ahead missed follows
// in a second round, plus at most one exec for big counts. With Asks (a
// batch's answer to its Tail, Count and Each ops) the same plan reads
// each file's handle first and the host only for what it did not hold.
type Poller struct {
	Tails    []*Tail
	Counters []*Counter
	Asks     *PollAsks // nil: every read goes to the host
}

// PollResult holds one update per tail and per counter, in order.
type PollResult struct {
	Tails  []TailUpdate
	Counts []CountUpdate
}

// history is the lines of a first attach's digest (none otherwise); when
// the pane's older lines come later, up holds them for the fold only.
func (t *Tail) history(up *TailUpdate) []Line {
	d := t.digested
	t.digested = nil
	if d == nil || up.Event != TailAttached {
		return nil
	}
	var hist []Line
	parse.NewSplitter(t.MaxLine).Feed(d, func(l []byte, truncated bool) { hist = append(hist, Line{Text: string(l), Truncated: truncated}) })
	if up.OlderDue {
		up.Held = len(hist)
	}
	return hist
}

// firstAttach takes what a reader holds of a first attach's history: its
// digest (the agent's), and a server log's start lines before it (the
// agent's E record, or a local file's scan).
func (t *Tail) firstAttach(rd fileReads, up *TailUpdate) {
	if t.Digest != "" {
		if d, ok := rd.digest(); ok {
			t.digested = d
		}
	}
	if t.Digest == parse.DigestServer {
		up.Starts, _ = rd.starts()
	}
}

type statResult struct {
	fi  FileInfo
	err error
}

// Poll runs one batch.
func (p *Poller) Poll(ctx context.Context, h Host) PollResult {
	keeper, _ := h.(Keeper)
	trd := make([]fileReads, len(p.Tails))
	for i, t := range p.Tails {
		trd[i] = p.reads(h, keeper, p.Asks.tail(t), t.Path)
	}
	crd := make([]fileReads, len(p.Counters))
	for i, c := range p.Counters {
		crd[i] = p.reads(h, keeper, p.Asks.counter(c), c.Path)
	}
	// reading ahead saves a round trip when each file is read by itself;
	// a batch already holds this poll's reads, and a read ahead of a file
	// that did not grow would only miss it (10,000 reads a poll over SFTP)
	paths, tailAhead, countAhead := p.firstRound(ctx, trd, crd, keeper != nil && !p.Asks.Answered())

	var wg sync.WaitGroup
	res := PollResult{Tails: make([]TailUpdate, len(p.Tails)), Counts: make([]CountUpdate, len(p.Counters))}
	for i, t := range p.Tails {
		rd := trd[i]
		up := &res.Tails[i]
		up.Path = t.Path
		st := paths[t.Path]
		if !t.attached {
			t.firstAttach(rd, up)
		}
		fill := t.fillDue() // asked by this poll's batch (Batch.fillOp)
		off, n, checkHead := t.plan(st.fi, st.err, up)
		hist := t.history(up) // a first attach's history, digested on the host
		if up.Event == TailMissing || up.Event == TailTruncated {
			rd.forget()
		}
		if n == 0 {
			up.Lines = hist
			t.ahead.update(0, 0)
			if fill != nil { // its read, beside the others
				wg.Add(1)
				go func(t *Tail, up *TailUpdate) { defer wg.Done(); t.olderIf(ctx, rd, fill, up) }(t, up)
			}
			continue
		}
		a := tailAhead[i]
		got, ok := a.take(off, n)
		ok = ok && (!checkHead || a.headAsked)
		if a != nil && !ok {
			rd.forget() // the kept handle no longer matches the path
			got = nil
		}
		wg.Add(1)
		go func(t *Tail, up *TailUpdate, size int64) {
			defer wg.Done()
			var head []byte
			var herr error
			var hw sync.WaitGroup
			switch {
			case ok && checkHead:
				head, herr = a.head, a.herr
			case checkHead:
				hw.Add(1)
				go func() { defer hw.Done(); head, herr = rd.read(ctx, 0, headLen) }()
			}
			data, err := readRest(got, off, n, false, func(o, m int64) ([]byte, error) { return rd.read(ctx, o, m) })
			hw.Wait()
			if err == nil {
				err = herr
			}
			if err != nil {
				up.Err = fmt.Errorf("tail %s: %w", t.Path, err)
				if hist != nil {
					t.attached = false // attach again next poll: its history with it, not lost
				}
				return
			}
			if !checkHead {
				head = nil
			}
			t.apply(data, head, size, up)
			if hist != nil {
				up.Lines = append(hist, up.Lines...)
			}
			if up.Event == TailReplaced {
				rd.forget()
			}
			t.olderIf(ctx, rd, fill, up)
			if up.Event == TailAttached {
				t.ahead.update(0, 0) // the start, not growth
			} else {
				t.ahead.update(int64(len(data)), t.MaxPerPoll)
			}
		}(t, up, st.fi.Size)
	}
	var onHost []rangeCount
	for i, c := range p.Counters {
		rd := crd[i]
		up := &res.Counts[i]
		st := paths[c.Path]
		pl := c.plan(st.fi, st.err, up)
		if up.Reset {
			rd.forget()
		}
		switch {
		case pl.n == 0 && pl.k == 0:
			c.ahead.update(0, 0)
		case pl.onHost:
			c.ahead.update(pl.n, 0) // too fast to read: counted on the host
			onHost = append(onHost, rangeCount{c: c, pl: pl, updated: up, rd: rd})
		default:
			from, m := pl.from(c), int64(pl.k)+pl.n
			a := countAhead[i]
			if up.Reset {
				a = nil // read ahead from the file as it was
			}
			got, ok := a.take(from, m)
			if a != nil && !ok {
				rd.forget()
				got = nil
			}
			wg.Add(1)
			go func(c *Counter, up *CountUpdate, pl countPlan) {
				defer wg.Done()
				readAt := func(o, m int64) ([]byte, error) { return rd.read(ctx, o, m) }
				data, err := readRest(got, from, m, true, readAt)
				if err != nil && keeper != nil {
					// a kept handle of a file since replaced ends short of
					// the path's size: open the path again
					rd.forget()
					data, err = readRest(nil, from, m, true, readAt)
				}
				if err != nil {
					up.Err, up.Lines = fmt.Errorf("count %s: %w", c.Path, err), c.lines
					return
				}
				if !c.apply(data, pl, up) {
					rd.forget() // a kept handle may hold the file that was replaced
					p.recount(ctx, h, rangeCount{c: c, pl: pl, updated: up, rd: rd})
					return
				}
				c.ahead.update(pl.n, c.RemoteAbove)
			}(c, up, pl)
		}
	}
	if len(onHost) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, rc := range p.hostCounts(ctx, h, onHost) {
				rc.rd.forget()
				p.recount(ctx, h, rc)
			}
		}()
	}
	wg.Wait()
	return res
}

// hostCounts counts the ranges of rs on the host, in one exec (those the
// batch's answer did not count). With it go
// the reads of each file's overlap (the counted bytes before the range, to
// check them) and of the bytes before the range's end (to check at the next
// poll). Those reads go by path, not through kept handles: a handle
// follows the file it was opened on, and the question is whether the path
// still names it. It returns the counters whose counted bytes changed:
// they are to be counted again.
func (p *Poller) hostCounts(ctx context.Context, h Host, rs []rangeCount) (changed []rangeCount) {
	type ends struct {
		check, tail       []byte
		checkErr, tailErr error
		end, tailLen      int64 // where tail ends, and how long it is to be
	}
	es := make([]ends, len(rs))
	var ns []hostCount
	var errs []error
	var stderr string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ns, errs, stderr = countsOf(ctx, h, rs) }()
	for i, rc := range rs {
		e, off, end := &es[i], rc.c.off, rc.c.off+rc.pl.n
		read := func(o, n int64) ([]byte, error) { return rc.rd.readPath(ctx, o, n) }
		e.end, e.tailLen = end, min(hostTailLen, end)
		if rc.pl.k > 0 {
			wg.Add(1)
			go func() { defer wg.Done(); e.check, e.checkErr = read(off-int64(rc.pl.k), int64(rc.pl.k)) }()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// a file that ends a line needs only the overlap (and that newline) kept
			n := min(hostTailShort, end)
			e.tail, e.tailErr = read(end-n, n)
			if e.tailErr == nil && int64(len(e.tail)) == n && n < end && (n == 0 || e.tail[n-1] != '\n') {
				e.tail, e.tailErr = read(max(0, end-hostTailLen), min(hostTailLen, end))
			} else {
				e.tailLen = n
			}
		}()
	}
	wg.Wait()
	for i, rc := range rs {
		// a partial last line longer than the read (a crash's NULs): read
		// back to its start, for setTail to find the newline before it
		if e := &es[i]; e.tailErr == nil && int64(len(e.tail)) == hostTailLen && e.end > hostTailLen && bytes.IndexByte(e.tail, '\n') < 0 {
			n := min(maxPartial+overlapLen, e.end)
			e.tail, e.tailErr = rc.rd.readPath(ctx, e.end-n, n)
			e.tailLen = n
		}
	}
	for i, rc := range rs {
		c, up, e := rc.c, rc.updated, es[i]
		switch {
		case errs[i] != nil:
			up.Err = fmt.Errorf("count %s on the host: %w", c.Path, errs[i])
		case ns[i].err != "" && stderr != "":
			up.Err = fmt.Errorf("count %s on the host: %s (%s)", c.Path, ns[i].err, stderr)
		case ns[i].err != "":
			up.Err = fmt.Errorf("count %s on the host: %s", c.Path, ns[i].err)
		case e.checkErr != nil:
			up.Err = fmt.Errorf("count %s: %w", c.Path, e.checkErr)
		case rc.pl.k > 0 && !rc.pl.learn && !bytes.Equal(e.check, c.tail):
			changed = append(changed, rc)
			continue
		}
		if up.Err != nil {
			up.Lines = c.lines
			continue
		}
		c.add(ns[i].lines, ns[i].size, up)
		c.tail, c.mtime = nil, rc.pl.mtime // learnt at the next growth, unless read here
		if e.tailErr == nil && ns[i].size == e.end && int64(len(e.tail)) == e.tailLen {
			c.setTail(e.tail, rc.pl.mtime)
			up.End = e.tail
		}
	}
	return changed
}

// countsOf is the host's line counts of rs's ranges: the batch's answer
// where it counted that range, the rest in one exec (its stderr, cut,
// for their errors).
func countsOf(ctx context.Context, h Host, rs []rangeCount) (ns []hostCount, errs []error, stderr string) {
	ns, errs = make([]hostCount, len(rs)), make([]error, len(rs))
	var ask []rangeCount
	var at []int
	for i, rc := range rs {
		if c, ok := rc.rd.hostCount(rc.c.off, rc.pl.n); ok {
			ns[i] = c
			continue
		}
		ask, at = append(ask, rc), append(at, i)
	}
	if len(ask) == 0 {
		return ns, errs, ""
	}
	r, err := h.Exec(ctx, hostCountArgv(ask)...)
	if err == nil && r.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", r.ExitCode, bytes.TrimSpace(r.Stderr))
	}
	var got []hostCount
	if err == nil {
		got, err = parseHostCounts(r.Stdout, len(ask))
	}
	for j, i := range at {
		if errs[i] = err; err == nil {
			ns[i] = got[j]
		}
	}
	if stderr = string(bytes.TrimSpace(r.Stderr)); len(stderr) > 300 {
		stderr = stderr[:300] + "…"
	}
	return ns, errs, stderr
}

// hostTailLen is how much of a file's end is read with a count on the host,
// for setTail to find the last newline in; hostTailShort when the file ends
// a line (the overlap and that newline are all setTail keeps then).
const (
	hostTailLen   = 4 << 10
	hostTailShort = overlapLen + 1
)

// recount counts rc's counter again from zero after its counted bytes
// changed: a small file read whole, a big one counted on the host.
func (p *Poller) recount(ctx context.Context, h Host, rc rangeCount) {
	c, up, pl := rc.c, rc.updated, rc.pl
	old := c.lines
	c.reset()
	up.Reset = true
	whole := countPlan{n: pl.size, size: pl.size, mtime: pl.mtime}
	var err error
	if pl.size <= c.RemoteAbove {
		var data []byte
		data, err = readRest(nil, 0, pl.size, true, func(o, m int64) ([]byte, error) { return rc.rd.read(ctx, o, m) })
		if err == nil {
			c.apply(data, whole, up)
		}
	} else {
		whole.onHost = true
		p.hostCounts(ctx, h, []rangeCount{{c: c, pl: whole, updated: up, rd: rc.rd}}) // from 0: nothing to compare
		err = up.Err
	}
	if err != nil {
		up.Err, up.Lines = fmt.Errorf("count %s again: %w", c.Path, err), old
	}
}

// firstRound stats every path (once, by its first reader) and, when
// reads are kept, reads ahead in the files that grew lately, all at once.
func (p *Poller) firstRound(ctx context.Context, trd, crd []fileReads, ahead bool) (map[string]*statResult, []*aheadRead, []*aheadRead) {
	n := len(p.Tails) + len(p.Counters)
	paths := make(map[string]*statResult, n)
	unique, names := make([]fileReads, 0, n), make([]string, 0, n)
	add := func(name string, rd fileReads) {
		if _, ok := paths[name]; !ok {
			paths[name] = nil
			unique, names = append(unique, rd), append(names, name)
		}
	}
	for i, t := range p.Tails {
		add(t.Path, trd[i])
	}
	for i, c := range p.Counters {
		add(c.Path, crd[i])
	}
	// each stat lands in its own element, the map pointing at it already
	results := make([]statResult, len(unique))
	var wg sync.WaitGroup
	for i, rd := range unique {
		paths[names[i]] = &results[i]
		// what the batch answered, here: a goroutine a file cost 0.5 s of
		// CPU a poll at 50,000 idle categories (BenchmarkIdleWatch50k)
		if fi, err, ok := rd.servedStat(); ok {
			results[i] = statResult{fi, err}
			continue
		}
		wg.Add(1)
		go func(r *statResult, rd fileReads) {
			defer wg.Done()
			r.fi, r.err = rd.stat(ctx)
		}(&results[i], rd)
	}
	tails, counts := make([]*aheadRead, len(p.Tails)), make([]*aheadRead, len(p.Counters))
	if ahead {
		for i, t := range p.Tails {
			if t.attached && t.ahead.size > 0 {
				tails[i] = startAhead(ctx, &wg, t.off, t.ahead.size, t.off > 0 || len(t.head) > 0, trd[i])
			}
		}
		for i, c := range p.Counters {
			if c.known && c.ahead.size > 0 {
				k := int64(len(c.tail)) // the overlap goes out with the new bytes
				counts[i] = startAhead(ctx, &wg, c.off-k, c.ahead.size+k, false, crd[i])
			}
		}
	}
	wg.Wait()
	return paths, tails, counts
}

// aheadRead is a read issued before the stat's answer, at the offset the
// file was read to.
type aheadRead struct {
	off, want  int64
	data, head []byte
	err, herr  error
	headAsked  bool
}

func startAhead(ctx context.Context, wg *sync.WaitGroup, off, want int64, head bool, rd fileReads) *aheadRead {
	a := &aheadRead{off: off, want: want, headAsked: head}
	wg.Add(1)
	go func() { defer wg.Done(); a.data, a.err = rd.read(ctx, off, want) }()
	if head {
		wg.Add(1)
		go func() { defer wg.Done(); a.head, a.herr = rd.read(ctx, 0, headLen) }()
	}
	return a
}

// take returns what the read-ahead holds of [off, off+n). ok is false when
// it cannot be used: another offset, an error, or a handle that ended short
// of the stat's size (the path now names another file, or the file grew
// between the two answers).
func (a *aheadRead) take(off, n int64) ([]byte, bool) {
	switch {
	case a == nil || a.err != nil || a.off != off:
		return nil, false
	case int64(len(a.data)) >= n:
		return a.data[:n], true
	case int64(len(a.data)) == a.want:
		return a.data, true // all it asked for; the rest follows
	}
	return nil, false
}

// readRest completes [off, off+n) when got holds only its start. With exact
// set, a short read is an error (counts must cover every byte).
func readRest(got []byte, off, n int64, exact bool, read func(off, n int64) ([]byte, error)) ([]byte, error) {
	have := int64(len(got))
	if have >= n {
		return got, nil
	}
	rest, err := read(off+have, n-have)
	if err != nil {
		return nil, err
	}
	if exact && int64(len(rest)) != n-have {
		return nil, fmt.Errorf("short read: %d of %d bytes", have+int64(len(rest)), n)
	}
	if have == 0 {
		return rest, nil
	}
	return append(append(make([]byte, 0, have+int64(len(rest))), got...), rest...), nil
}

// readAhead remembers how fast a file grows. A file that grew in one of the
// last aheadPolls polls is read ahead: its new bytes come back with the
// stats, in the same round trip. A quiet file costs only its stat.
type readAhead struct {
	size int64 // bytes to ask for; 0: quiet
	left int   // polls without growth before it counts as quiet
}

const (
	aheadPolls = 3
	// aheadMin is above pkg/sftp's 32 KiB packet, so its ReadAt splits the
	// read into concurrent requests and takes a short answer as the end of
	// file: one round trip, where a single short request would take two.
	aheadMin = 64 << 10
)

// update records n bytes read in a poll; limit caps the read-ahead (0 turns it off).
func (r *readAhead) update(n, limit int64) {
	if n > 0 {
		r.size, r.left = min(max(2*n, aheadMin), limit), aheadPolls
		if n > limit {
			r.size = 0 // grows faster than the cap: read the usual way
		}
		return
	}
	if r.left > 0 {
		r.left--
	}
	if r.left == 0 {
		r.size = 0
	}
}
