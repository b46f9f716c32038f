package remote

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// hosts runs a test against the Local host and the SSH host over a real sshd.
func hosts(t *testing.T, f func(t *testing.T, h Host)) {
	t.Run("local", func(t *testing.T) { f(t, Local{}) })
	t.Run("ssh", func(t *testing.T) {
		s := sshdtest.Start(t)
		f(t, dial(t, opts(t, s)))
	})
}

func texts(ls []Line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Text
	}
	return out
}

func TestTailFollowsTruncatesAndReplaces(t *testing.T) {
	t.Parallel()
	hosts(t, func(t *testing.T, h Host) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "inference_all.log")
		tail := NewTail(p)
		if up := tail.Poll(ctx, h); up.Event != TailNone || up.Err != nil {
			t.Fatalf("missing file: %+v", up) // normal: it may appear later
		}
		writeFile(t, p, "one\ntwo\nthr")
		up := tail.Poll(ctx, h)
		if up.Event != TailAttached || strings.Join(texts(up.Lines), ",") != "one,two" {
			t.Fatalf("attach: %+v", up)
		}
		appendFile(t, p, "ee\nfour\n")
		if up := tail.Poll(ctx, h); strings.Join(texts(up.Lines), ",") != "three,four" {
			t.Fatalf("partial line carried: %+v", up)
		}
		if up := tail.Poll(ctx, h); len(up.Lines) != 0 || up.Event != TailNone {
			t.Fatalf("idle poll: %+v", up)
		}
		// truncation (copytruncate): size below the offset
		writeFile(t, p, "new\n")
		up = tail.Poll(ctx, h)
		if up.Event != TailTruncated || strings.Join(texts(up.Lines), ",") != "new" {
			t.Fatalf("truncate: %+v", up)
		}
		// replacement by rename, with a new file longer than the offset
		tmp := p + ".new"
		writeFile(t, tmp, "REPLACED first line\nsecond\n")
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
		if up := tail.Poll(ctx, h); up.Event != TailReplaced {
			t.Fatalf("replace: %+v", up)
		}
		if up := tail.Poll(ctx, h); strings.Join(texts(up.Lines), ",") != "REPLACED first line,second" {
			t.Fatalf("after replace: %+v", up)
		}
		os.Remove(p)
		if up := tail.Poll(ctx, h); up.Event != TailMissing {
			t.Fatalf("removed: %+v", up)
		}
	})
}

func TestTailStartsNearTheEndAndCapsReads(t *testing.T) {
	t.Parallel()
	hosts(t, func(t *testing.T, h Host) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "big.log")
		var b strings.Builder
		for i := 0; i < 10000; i++ {
			fmt.Fprintf(&b, "line %05d\n", i) // 11 bytes a line
		}
		writeFile(t, p, b.String())
		tail := NewTail(p)
		tail.StartBack, tail.MaxPerPoll = 1100, 550
		up := tail.Poll(ctx, h)
		// starts ~100 lines from the end, drops the partial first line, reads 550 bytes
		if len(up.Lines) != 49 || up.Lines[0].Text != "line 09900" || up.Behind != 551 {
			t.Fatalf("first attach: %d lines, first %q, behind %d", len(up.Lines), up.Lines[0].Text, up.Behind)
		}
		lines := up.Lines
		for up.Behind > 0 {
			up = tail.Poll(ctx, h)
			lines = append(lines, up.Lines...)
		}
		if len(lines) != 100 || lines[99].Text != "line 09999" {
			t.Fatalf("catch up: %d lines, last %q", len(lines), lines[len(lines)-1].Text)
		}
	})
}

// Counts are exact (equal to wc -l at the size read) while a writer appends
// partial lines, through both the SFTP path and the on-host path.
func TestCountsExactWhileWriterAppends(t *testing.T) {
	t.Parallel()
	hosts(t, func(t *testing.T, h Host) {
		ctx := context.Background()
		dir := t.TempDir()
		small, big := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
		writeFile(t, big, strings.Repeat(`{"id":"x","content":"`+strings.Repeat("y", 1000)+"\"}\n", 3000)) // 3 MB: counted on the host
		cs := []*Counter{NewCounter(small), NewCounter(big)}
		cs[0].RemoteAbove, cs[1].RemoteAbove = 1<<20, 64<<10
		p := Poller{Counters: cs}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, f := range []string{small, big} {
			wg.Add(1)
			go func(f string) {
				defer wg.Done()
				fh, _ := os.OpenFile(f, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				defer fh.Close()
				for {
					select {
					case <-stop:
						return
					default:
					}
					// a line written in two pieces, so polls see torn tails
					line := fmt.Sprintf(`{"id":%d,"x":"%s"}`+"\n", rand.Int(), strings.Repeat("z", rand.IntN(3000)))
					cut := rand.IntN(len(line))
					fh.WriteString(line[:cut])
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
					fh.WriteString(line[cut:])
				}
			}(f)
		}
		for i := 0; i < 12; i++ {
			res := p.Poll(ctx, h)
			for _, u := range res.Counts {
				if u.Err != nil {
					t.Fatal(u.Err)
				}
				// exact at the size read: count the file's prefix here
				data, _ := os.ReadFile(u.Path)
				if want := int64(strings.Count(string(data[:u.Size]), "\n")); u.Lines != want {
					t.Fatalf("poll %d %s: %d lines at size %d, want %d", i, filepath.Base(u.Path), u.Lines, u.Size, want)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		res := p.Poll(ctx, h)
		for _, u := range res.Counts {
			if want := wcL(t, u.Path); u.Lines != want {
				t.Fatalf("%s: %d, wc -l says %d", u.Path, u.Lines, want)
			}
		}
		// a truncated file is counted again from zero
		writeFile(t, small, "1\n2\n")
		if u := p.Poll(ctx, h).Counts[0]; !u.Reset || u.Lines != 2 {
			t.Fatalf("after truncation: %+v", u)
		}
	})
}

func TestCountHostileFileNames(t *testing.T) {
	t.Parallel()
	hosts(t, func(t *testing.T, h Host) {
		dir := filepath.Join(t.TempDir(), `$(touch /tmp/synthwatch-x); "B9 'x`)
		os.MkdirAll(dir, 0o755)
		p := filepath.Join(dir, "-raw responses.jsonl")
		writeFile(t, p, strings.Repeat("l\n", 5000))
		c := NewCounter(p)
		c.RemoteAbove = 100 // force the on-host path with its shell
		u := (&Poller{Counters: []*Counter{c}}).Poll(context.Background(), h).Counts[0]
		if u.Err != nil || u.Lines != 5000 {
			t.Fatalf("%+v", u)
		}
		if _, err := os.Stat("/tmp/synthwatch-x"); err == nil {
			os.Remove("/tmp/synthwatch-x")
			t.Fatal("a file name was executed")
		}
	})
}
