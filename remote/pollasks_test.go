package remote

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A poll's handles, once read, keep their counts and not their answers:
// a watch keeps its last and its cold poll's handles for the counts, and
// the answers they held (a megabyte of log here, every file's stat and
// read at 50,000 categories) were kept with them.
func TestReleasedAsksKeepTheirCountsOnly(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	writeFile(t, log, strings.Repeat("a line of the worker's log\n", 40000))
	raw := filepath.Join(dir, "raw.jsonl")
	writeFile(t, raw, strings.Repeat("{\"id\":1}\n", 100))
	b := &Batch{}
	tl := NewTail(log)
	tl.StartBack = 1 << 20
	b.Tail(tl)
	c := NewCounter(raw)
	b.Count(c)
	if err := NewFallback(Local{}).Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	asks := b.PollAsks()
	up := (&Poller{Tails: []*Tail{tl}, Counters: []*Counter{c}, Asks: asks}).Poll(context.Background(), Local{})
	if up.Tails[0].Err != nil || up.Counts[0].Lines != 100 {
		t.Fatalf("the poll: %v, %d lines", up.Tails[0].Err, up.Counts[0].Lines)
	}
	hits, misses := asks.Counts()
	if hits == 0 || misses != 0 {
		t.Fatalf("%d reads from the batch, %d not: %v", hits, misses, asks.Missed())
	}
	b = nil
	up = PollResult{}
	before := heapInUse()
	asks.Release()
	after := heapInUse()
	if h, m := asks.Counts(); h != hits || m != misses {
		t.Errorf("released: %d and %d reads, want %d and %d", h, m, hits, misses)
	}
	if asks.tail(tl) != nil || asks.counter(c) != nil {
		t.Error("released, the handles still answer")
	}
	// the log's megabyte, read by the batch, went with the answers
	if before-after < 1<<20 {
		t.Errorf("released: the heap went from %d to %d bytes, want a megabyte less", before, after)
	}
	runtime.KeepAlive(asks)
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
