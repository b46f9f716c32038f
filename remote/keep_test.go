package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// keptLocal is Local with kept handles that follow the inode, as SFTP
// handles do. Its Stat answers only after statDelay, and it counts the kept
// reads that start while a stat of the same path is out: reads that went
// out with the stats.
type keptLocal struct {
	Local
	statDelay time.Duration

	mu     sync.Mutex
	files  map[string]*os.File
	statIn map[string]int  // stats of path being answered
	during map[string]bool // a read started during the stat
	ahead  map[string]int  // stats that had a read go out with them
}

func newKeptLocal() *keptLocal {
	return &keptLocal{statDelay: 100 * time.Millisecond, files: map[string]*os.File{}, statIn: map[string]int{}, during: map[string]bool{}, ahead: map[string]int{}}
}

func (k *keptLocal) Stat(ctx context.Context, p string) (FileInfo, error) {
	k.mu.Lock()
	k.statIn[p]++
	k.mu.Unlock()
	time.Sleep(k.statDelay)
	k.mu.Lock()
	k.statIn[p]--
	if k.during[p] {
		k.ahead[p]++
		k.during[p] = false
	}
	k.mu.Unlock()
	return k.Local.Stat(ctx, p)
}

func (k *keptLocal) ReadKept(_ context.Context, p string, off int64, n int) ([]byte, error) {
	// a read sent with the stats may run before the stat's goroutine does
	for i := 0; i < 10; i++ {
		k.mu.Lock()
		out := k.statIn[p] > 0
		if out {
			k.during[p] = true
		}
		k.mu.Unlock()
		if out {
			break
		}
		time.Sleep(time.Millisecond)
	}
	k.mu.Lock()
	f := k.files[p]
	if f == nil {
		var err error
		if f, err = os.Open(p); err != nil {
			k.mu.Unlock()
			return nil, err
		}
		k.files[p] = f
	}
	k.mu.Unlock()
	buf := make([]byte, n)
	m, _ := f.ReadAt(buf, off)
	return buf[:m], nil
}

func (k *keptLocal) Forget(p string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if f := k.files[p]; f != nil {
		f.Close()
		delete(k.files, p)
	}
}

func (k *keptLocal) aheadReads(p string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ahead[p]
}

// keepers runs a test against keptLocal and the SSH host over a real sshd.
func keepers(t *testing.T, f func(t *testing.T, h Host)) {
	t.Run("kept-local", func(t *testing.T) { f(t, newKeptLocal()) })
	t.Run("ssh", func(t *testing.T) {
		s := sshdtest.Start(t)
		f(t, dial(t, opts(t, s)))
	})
}

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "line %04d\n", i)
	}
	return b.String()
}

// A file that grows is read with its stat, one round trip; a quiet one is
// only stat'ed again after aheadPolls polls.
func TestReadAheadGoesOutWithTheStats(t *testing.T) {
	t.Parallel()
	k := newKeptLocal()
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "inference_all.log")
	writeFile(t, p, numbered(0, 10))
	tail := NewTail(p)
	tail.Poll(ctx, k) // attach: the start is not growth
	var got []string
	for i := 1; i <= 3; i++ {
		appendFile(t, p, numbered(10*i, 10*i+10))
		got = append(got, texts(tail.Poll(ctx, k).Lines)...)
	}
	if len(got) != 30 || got[0] != "line 0010" || got[29] != "line 0039" {
		t.Fatalf("lines: %d %v", len(got), got)
	}
	// the first growth was read after its stat; the next two with it
	if n := k.aheadReads(p); n != 2 {
		t.Fatalf("reads ahead: %d, want 2", n)
	}
	for i := 0; i < aheadPolls+2; i++ {
		if up := tail.Poll(ctx, k); len(up.Lines) != 0 {
			t.Fatalf("idle: %+v", up)
		}
	}
	if n := k.aheadReads(p); n != 2+aheadPolls {
		t.Fatalf("reads ahead after going quiet: %d, want %d", n, 2+aheadPolls)
	}
}

// A log rotated by rename while its writer keeps appending to the old file:
// the kept handle still reads the old inode, but once it stops matching the
// path the new file is read from its start, every line once.
func TestReadAheadNoticesARenamedFile(t *testing.T) {
	t.Parallel()
	keepers(t, func(t *testing.T, h Host) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "sglang.log")
		writeFile(t, p, numbered(0, 5))
		tail := NewTail(p)
		tail.Poll(ctx, h)
		for i := 1; i <= 2; i++ { // hot
			appendFile(t, p, numbered(5*i, 5*i+5))
			tail.Poll(ctx, h)
		}
		if err := os.Rename(p, p+".1"); err != nil {
			t.Fatal(err)
		}
		appendFile(t, p+".1", "old inode 1\nold inode 2\n")
		writeFile(t, p, "NEW "+numbered(0, 40))
		var got []string
		replaced := false
		for i := 0; i < 4; i++ {
			up := tail.Poll(ctx, h)
			if up.Err != nil {
				t.Fatal(up.Err)
			}
			replaced = replaced || up.Event == TailReplaced
			got = append(got, texts(up.Lines)...)
			if i == 1 {
				appendFile(t, p, numbered(40, 42))
			}
		}
		all := strings.Join(got, "\n")
		if !replaced || strings.Count(all, "line 0039") != 1 || !strings.HasSuffix(all, "line 0041") || !strings.HasPrefix(all, "NEW line 0000") {
			t.Fatalf("replaced %v, lines:\n%s", replaced, all)
		}
	})
}

// Counts read ahead stay exact: truncation (a torn tail repaired) counts
// again from zero, a removed file forgets its handle.
func TestReadAheadCountsStayExact(t *testing.T) {
	t.Parallel()
	keepers(t, func(t *testing.T, h Host) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "raw_responses.jsonl")
		writeFile(t, p, numbered(0, 3))
		c := NewCounter(p)
		poll := func() CountUpdate {
			t.Helper()
			u := (&Poller{Counters: []*Counter{c}}).Poll(ctx, h).Counts[0]
			if u.Err != nil {
				t.Fatal(u.Err)
			}
			if u.Missing {
				return u
			}
			if want := wcL(t, p); u.Lines != want {
				t.Fatalf("%d lines, wc -l says %d", u.Lines, want)
			}
			return u
		}
		poll()
		for i := 0; i < 5; i++ {
			appendFile(t, p, numbered(0, 100)+`{"torn`)
			poll()
			appendFile(t, p, "\"}\n")
			poll()
		}
		if k, ok := h.(*keptLocal); ok && k.aheadReads(p) < 8 {
			t.Fatalf("only %d of 10 growths read ahead", k.aheadReads(p))
		}
		data, _ := os.ReadFile(p)
		if err := os.WriteFile(p, data[:len(data)/2], 0o644); err != nil { // shrink while hot
			t.Fatal(err)
		}
		if u := poll(); !u.Reset {
			t.Fatalf("shrink not seen: %+v", u)
		}
		os.Remove(p)
		if u := poll(); !u.Missing {
			t.Fatalf("removal not seen: %+v", u)
		}
		if s, ok := h.(*SSH); ok {
			sess, _ := s.session()
			sess.kept.mu.Lock()
			n := len(sess.kept.files)
			sess.kept.mu.Unlock()
			if n != 0 {
				t.Fatalf("%d handles kept after the file went", n)
			}
		}
		writeFile(t, p, numbered(0, 7))
		if u := poll(); u.Lines != 7 {
			t.Fatalf("recreated: %+v", u)
		}
	})
}

func TestReadAheadSize(t *testing.T) {
	t.Parallel()
	var r readAhead
	r.update(100, 1<<20)
	if r.size != aheadMin || r.left != aheadPolls {
		t.Fatalf("small growth: %+v", r)
	}
	r.update(200<<10, 1<<20)
	if r.size != 400<<10 {
		t.Fatalf("twice the growth: %+v", r)
	}
	r.update(300<<10, 256<<10)
	if r.size != 0 {
		t.Fatalf("beyond the cap: %+v", r)
	}
	r.update(100, 1<<20)
	for i := 0; i < aheadPolls; i++ {
		r.update(0, 0)
	}
	if r.size != 0 {
		t.Fatalf("quiet: %+v", r)
	}
	a := &aheadRead{off: 10, want: 4, data: []byte("abcd")}
	if d, ok := a.take(10, 2); !ok || string(d) != "ab" {
		t.Fatal("prefix")
	}
	if d, ok := a.take(10, 9); !ok || string(d) != "abcd" {
		t.Fatal("full read-ahead, rest follows")
	}
	a.data = []byte("ab")
	if _, ok := a.take(10, 3); ok {
		t.Fatal("ended short of the stat: not the same file")
	}
	if _, ok := a.take(0, 1); ok {
		t.Fatal("another offset")
	}
}
