package remote

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// Poller reads many tails and counters in one batch: every stat goes out at
// once over the one SFTP session (one round trip when nothing changed), then
// every read, plus at most one exec for big counts.
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
	wg.Wait()

	res := PollResult{Tails: make([]TailUpdate, len(p.Tails)), Counts: make([]CountUpdate, len(p.Counters))}
	for i, t := range p.Tails {
		up := &res.Tails[i]
		up.Path = t.Path
		st := paths[t.Path]
		off, n, checkHead := t.plan(st.fi, st.err, up)
		if n == 0 {
			continue
		}
		wg.Add(1)
		go func(t *Tail, up *TailUpdate, size int64) {
			defer wg.Done()
			var head []byte
			var herr error
			var hw sync.WaitGroup
			if checkHead {
				hw.Add(1)
				go func() { defer hw.Done(); head, herr = h.ReadAt(ctx, t.Path, 0, headLen) }()
			}
			data, err := h.ReadAt(ctx, t.Path, off, int(n))
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
		}(t, up, st.fi.Size)
	}
	var onHost []rangeCount
	for i, c := range p.Counters {
		up := &res.Counts[i]
		st := paths[c.Path]
		off, n, remote := c.plan(st.fi, st.err, up)
		switch {
		case n == 0:
		case remote:
			onHost = append(onHost, rangeCount{c: c, off: off, n: n, updated: up})
		default:
			wg.Add(1)
			go func(c *Counter, up *CountUpdate, off, n int64) {
				defer wg.Done()
				data, err := h.ReadAt(ctx, c.Path, off, int(n))
				if err == nil && int64(len(data)) != n {
					err = fmt.Errorf("short read: %d of %d bytes", len(data), n)
				}
				if err != nil {
					up.Err, up.Lines = fmt.Errorf("count %s: %w", c.Path, err), c.lines
					return
				}
				c.add(int64(bytes.Count(data, []byte{'\n'})), off+n, up)
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
