package remote

import (
	"bytes"
	"path"
	"sync"
	"sync/atomic"
)

// The Poller's handles. A Tail, Count or Each op returns what the answer
// said of its file: its stat, the bytes read from the offset (and the
// head), the host's line count, a first attach's digest and start lines.
// The Poller turns them into updates with the code it reads the host
// with (pollreads.go: fileReads), so a read the batch did not make goes to the
// host, counted as one not in the batch.

// fileAns is what a batch's answer said of one file (nil: not said;
// a digest or start lines sent empty are not nil).
type fileAns struct {
	stat   *statAns
	reads  []readAns
	count  *countAns // the host's count (N record)
	digest []byte
	starts []byte
}

// TailAsk is a Tail op: the tail's stat, its bytes from its offset, the
// head that tells a replaced file, and on a first attach the history's
// digest and a server log's start lines (the agent's).
type TailAsk struct {
	path string
	ans  *fileAns
}

// Answered says whether the batch said anything of the tail's file.
func (t *TailAsk) Answered() bool { return t != nil && t.ans != nil }

// CountAsk is a Count op: the counter's stat, its new bytes with the
// overlap, or the host's count of them with the file's last bytes.
type CountAsk struct {
	path string
	ans  *fileAns
}

// Answered says whether the batch said anything of the counter's file.
func (c *CountAsk) Answered() bool { return c != nil && c.ans != nil }

// EachAsk is an Each op: what the batch read of every category's files
// under dir, found by the host, each file's answer by its path.
type EachAsk struct {
	dir   string
	files map[string]*fileAns
}

// PollAsks are a batch's Tail, Count and Each handles, by the tail or
// counter that asked them (an Each's by path: its categories were not
// known when it was asked), and how many of the Poller's reads they held.
type PollAsks struct {
	tails    map[*Tail]*TailAsk
	counts   map[*Counter]*CountAsk
	each     []*EachAsk
	answered atomic.Bool // a batch's answer was parsed (in part, maybe)

	hits, misses atomic.Int64
	mu           sync.Mutex
	missed       []string
}

func newPollAsks() *PollAsks {
	return &PollAsks{tails: map[*Tail]*TailAsk{}, counts: map[*Counter]*CountAsk{}}
}

// Answered says whether the batch answered (in part, maybe): the Poller
// then reads no file ahead, the answer holds this poll's reads.
func (p *PollAsks) Answered() bool { return p != nil && p.answered.Load() }

// Counts are the Poller's reads the batch held, and those not in it
// (that went to the host).
func (p *PollAsks) Counts() (hits, misses int64) {
	if p == nil {
		return 0, 0
	}
	return p.hits.Load(), p.misses.Load()
}

// Release drops the answers once the poll has read them, keeping its
// counts (Counts, Missed): a watch keeps its last polls' handles for
// those, and at 50,000 categories their answers were 140 MB of heap
// (BenchmarkIdleWatch50k). Called once the poll's reads are done.
func (p *PollAsks) Release() {
	if p != nil {
		p.tails, p.counts, p.each = nil, nil, nil
	}
}

// Missed lists the first reads that were not in the batch.
func (p *PollAsks) Missed() []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.missed...)
}

// note counts a read from the batch (hit) or not in it.
func (p *PollAsks) note(hit bool, what func() string) {
	if !p.Answered() {
		return
	}
	if hit {
		p.hits.Add(1)
		return
	}
	p.misses.Add(1)
	p.mu.Lock()
	if len(p.missed) < 32 {
		p.missed = append(p.missed, what())
	}
	p.mu.Unlock()
}

// tail is t's answer: its op's, else an Each's of its path.
func (p *PollAsks) tail(t *Tail) *fileAns {
	if p == nil {
		return nil
	}
	if a := p.tails[t]; a != nil && a.ans != nil {
		return a.ans
	}
	return p.eachOf(t.Path)
}

// counter is c's answer: its op's, else an Each's of its path.
func (p *PollAsks) counter(c *Counter) *fileAns {
	if p == nil {
		return nil
	}
	if a := p.counts[c]; a != nil && a.ans != nil {
		return a.ans
	}
	return p.eachOf(c.Path)
}

func (p *PollAsks) eachOf(name string) *fileAns {
	for _, e := range p.each {
		if f := e.files[path.Clean(name)]; f != nil {
			return f
		}
	}
	return nil
}

// set answers the handles from a: each op's file, and every file an Each
// op's dir holds (dir/CATEGORY/FILE).
func (p *PollAsks) set(a *answers) {
	if p == nil || a == nil {
		return
	}
	p.answered.Store(true)
	files := a.files()
	for _, t := range p.tails {
		t.ans = files[path.Clean(t.path)]
	}
	for _, c := range p.counts {
		c.ans = files[path.Clean(c.path)]
	}
	for _, e := range p.each {
		e.files = map[string]*fileAns{}
		dir := path.Clean(e.dir)
		for name, f := range files {
			if path.Dir(path.Dir(name)) == dir {
				e.files[name] = f
			}
		}
	}
}

// files groups a's stats, reads, counts, digests and start lines by file.
func (a *answers) files() map[string]*fileAns {
	// sized once, and the files, stats and counts made in one array each:
	// at 50,000 categories these were 300,000 allocations a poll
	n := max(len(a.stats), len(a.counts))
	fs := make(map[string]*fileAns, n)
	slab := make([]fileAns, 0, n)
	get := func(p string) *fileAns {
		f := fs[p]
		if f == nil {
			if len(slab) < cap(slab) {
				slab = slab[:len(slab)+1]
				f = &slab[len(slab)-1]
			} else {
				f = &fileAns{}
			}
			fs[p] = f
		}
		return f
	}
	stats := make([]statAns, 0, len(a.stats))
	for p, s := range a.stats {
		stats = append(stats, s)
		get(p).stat = &stats[len(stats)-1]
	}
	for p, rs := range a.reads {
		get(p).reads = rs
	}
	counts := make([]countAns, 0, len(a.counts))
	for p, c := range a.counts {
		counts = append(counts, c)
		get(p).count = &counts[len(counts)-1]
	}
	for p, d := range a.digest {
		get(p).digest = d
	}
	for p, s := range a.starts {
		get(p).starts = s
	}
	return fs
}

// read serves [off, off+n) from a read that covers it, or reached the end of the file.
func (f *fileAns) read(off, n int64) ([]byte, error, bool) {
	for _, r := range f.reads {
		end := r.off + int64(len(r.data))
		switch {
		case r.err != nil && r.off == off:
			return nil, r.err, true
		case r.err != nil || off < r.off || off > end:
		case off+n <= end:
			return append([]byte(nil), r.data[off-r.off:off-r.off+n]...), nil, true
		case r.eof:
			return append([]byte(nil), r.data[off-r.off:]...), nil, true
		}
	}
	return nil, nil, false
}

// hostCount is the host's count of [off, off+n), when it counted that range.
func (f *fileAns) hostCount(off, n int64) (hostCount, bool) {
	if f.count == nil || f.count.from != off+1 || f.count.n != n {
		return hostCount{}, false
	}
	return hostCount{lines: f.count.lines, size: off + n, err: f.count.err}, true
}

// startLines are the start lines the agent found before a first attach's history.
func (f *fileAns) startLines() ([]string, bool) {
	if f.starts == nil {
		return nil, false
	}
	var out []string
	for _, l := range bytes.Split(f.starts, []byte{'\n'}) {
		if len(l) > 0 {
			out = append(out, string(l))
		}
	}
	return out, true
}
