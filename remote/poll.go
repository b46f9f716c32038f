package remote

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// Poller reads many tails and counters in one batch. Every stat goes out at
// once over the one SFTP session, and on a Keeper host so do reads of the
// files that grew lately (read ahead through kept handles), so a poll of a
// running job costs one round trip. Whatever the read-ahead missed follows
// in a second round, plus at most one exec for big counts.
type Poller struct {
	Tails    []*Tail
	Counters []*Counter
}

// PollResult holds one update per tail and per counter, in order.
type PollResult struct {
	Tails  []TailUpdate
	Counts []CountUpdate
}

type statResult struct {
	fi  FileInfo
	err error
}

// Poll runs one batch.
func (p *Poller) Poll(ctx context.Context, h Host) PollResult {
	keeper, _ := h.(Keeper)
	read := func(path string, off, n int64) ([]byte, error) {
		if keeper != nil {
			return keeper.ReadKept(ctx, path, off, int(n))
		}
		return h.ReadAt(ctx, path, off, int(n))
	}
	forget := func(path string) {
		if keeper != nil {
			keeper.Forget(path)
		}
	}
	paths, tailAhead, countAhead := p.firstRound(ctx, h, keeper != nil, read)

	var wg sync.WaitGroup
	res := PollResult{Tails: make([]TailUpdate, len(p.Tails)), Counts: make([]CountUpdate, len(p.Counters))}
	for i, t := range p.Tails {
		up := &res.Tails[i]
		up.Path = t.Path
		st := paths[t.Path]
		off, n, checkHead := t.plan(st.fi, st.err, up)
		if up.Event == TailMissing || up.Event == TailTruncated {
			forget(t.Path)
		}
		if n == 0 {
			t.ahead.update(0, 0)
			continue
		}
		a := tailAhead[i]
		got, ok := a.take(off, n)
		ok = ok && (!checkHead || a.headAsked)
		if a != nil && !ok {
			forget(t.Path) // the kept handle no longer matches the path
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
				go func() { defer hw.Done(); head, herr = read(t.Path, 0, headLen) }()
			}
			data, err := readRest(got, off, n, false, func(o, m int64) ([]byte, error) { return read(t.Path, o, m) })
			hw.Wait()
			if err == nil {
				err = herr
			}
			if err != nil {
				up.Err = fmt.Errorf("tail %s: %w", t.Path, err)
				return
			}
			if !checkHead {
				head = nil
			}
			t.apply(data, head, size, up)
			if up.Event == TailReplaced {
				forget(t.Path)
			}
			if up.Event == TailAttached {
				t.ahead.update(0, 0) // the start, not growth
			} else {
				t.ahead.update(int64(len(data)), t.MaxPerPoll)
			}
		}(t, up, st.fi.Size)
	}
	var onHost []rangeCount
	for i, c := range p.Counters {
		up := &res.Counts[i]
		st := paths[c.Path]
		off, n, remote := c.plan(st.fi, st.err, up)
		if up.Reset {
			forget(c.Path)
		}
		switch {
		case n == 0:
			c.ahead.update(0, 0)
		case remote:
			c.ahead.update(n, 0) // too fast to read: counted on the host
			onHost = append(onHost, rangeCount{c: c, off: off, n: n, updated: up})
		default:
			a := countAhead[i]
			got, ok := a.take(off, n)
			if a != nil && !ok {
				forget(c.Path)
				got = nil
			}
			wg.Add(1)
			go func(c *Counter, up *CountUpdate, off, n int64) {
				defer wg.Done()
				data, err := readRest(got, off, n, true, func(o, m int64) ([]byte, error) { return read(c.Path, o, m) })
				if err != nil {
					up.Err, up.Lines = fmt.Errorf("count %s: %w", c.Path, err), c.lines
					return
				}
				c.add(int64(bytes.Count(data, []byte{'\n'})), off+n, up)
				c.ahead.update(n, c.RemoteAbove)
			}(c, up, off, n)
		}
	}
	if len(onHost) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := h.Exec(ctx, hostCountArgv(onHost)...)
			var ns []hostCount
			if err == nil && r.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", r.ExitCode, bytes.TrimSpace(r.Stderr))
			}
			if err == nil {
				ns, err = parseHostCounts(r.Stdout, len(onHost))
			}
			for i, rc := range onHost {
				if err != nil {
					rc.updated.Err, rc.updated.Lines = fmt.Errorf("count %s on the host: %w", rc.c.Path, err), rc.c.lines
					continue
				}
				rc.c.add(ns[i].lines, ns[i].size, rc.updated)
			}
		}()
	}
	wg.Wait()
	return res
}

// firstRound stats every path and, when reads are kept, reads ahead in the
// files that grew lately, all at once.
func (p *Poller) firstRound(ctx context.Context, h Host, ahead bool, read func(string, int64, int64) ([]byte, error)) (map[string]*statResult, []*aheadRead, []*aheadRead) {
	paths := map[string]*statResult{}
	var unique []string
	for _, t := range p.Tails {
		if _, ok := paths[t.Path]; !ok {
			paths[t.Path] = nil
			unique = append(unique, t.Path)
		}
	}
	for _, c := range p.Counters {
		if _, ok := paths[c.Path]; !ok {
			paths[c.Path] = nil
			unique = append(unique, c.Path)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, path := range unique {
		wg.Add(1)
		go func(path string) {
			defer wg.Done()
			fi, err := h.Stat(ctx, path)
			mu.Lock()
			paths[path] = &statResult{fi, err}
			mu.Unlock()
		}(path)
	}
	tails, counts := make([]*aheadRead, len(p.Tails)), make([]*aheadRead, len(p.Counters))
	if ahead {
		for i, t := range p.Tails {
			if t.attached && t.ahead.size > 0 {
				tails[i] = startAhead(&wg, t.Path, t.off, t.ahead.size, t.off > 0 || len(t.head) > 0, read)
			}
		}
		for i, c := range p.Counters {
			if c.known && c.ahead.size > 0 {
				counts[i] = startAhead(&wg, c.Path, c.off, c.ahead.size, false, read)
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

func startAhead(wg *sync.WaitGroup, path string, off, want int64, head bool, read func(string, int64, int64) ([]byte, error)) *aheadRead {
	a := &aheadRead{off: off, want: want, headAsked: head}
	wg.Add(1)
	go func() { defer wg.Done(); a.data, a.err = read(path, off, want) }()
	if head {
		wg.Add(1)
		go func() { defer wg.Done(); a.head, a.herr = read(path, 0, headLen) }()
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
