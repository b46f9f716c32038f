package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
)

// pyWorkerLog is the old script's log as its print calls wrote it: each
// category's header and prompt count, a progress line every 50 prompts, a
// traceback now and then. Its end holds a 3,000-byte line that a
// FirstBack of 8 KB falls in.
const pyWorkerLog = `
import sys
path, size, grow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "a") as f:
    if grow:
        for k in range(grow):
            print(f"{9000 + k}/9900 (3 err) 9.{k % 10} req/s avg_comp={200 + k % 97}tok ETA=1m", file=f)
        f.write("9950/9900 (3 err) 9.9 req")  # a line being written
        sys.exit()
    c = 0
    while f.tell() < size:
        print(f"Processing: B{c}_cat (SHORT)", file=f)
        print(f"B{c}_cat: 9000 prompts", file=f)
        for k in range(50, 9001, 50):
            print(f"{k}/9000 ({k // 3000} err) {8 + k % 5}.{k % 10} req/s avg_comp={200 + k % 97}tok ETA={(9000 - k) // 500}m", file=f)
            if k % 2500 == 0:
                print('Traceback (most recent call last):\n  File "w.py", line 3\nValueError: boom', file=f)
            if f.tell() >= size:
                break
        c += 1
    print("ValueError: " + "x" * 3000, file=f)
    after = 0
    while after < 8192 - 1500:
        line = f"{after}/9000 (0 err) 9.0 req/s avg_comp=210tok ETA=3m"
        print(line, file=f)
        after += len(line) + 1
`

func pyLog(t *testing.T, py, path string, size, grow int) {
	t.Helper()
	if out, err := exec.Command(py, "-c", pyWorkerLog, path, strconv.Itoa(size), strconv.Itoa(grow)).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v %s", err, out)
	}
}

// A worker log's first read with FirstBack: the last 8 KB as they are,
// the history's digest up to them (what the fold reads); the next poll,
// with the log grown between, brings the lines a plain first read shows
// before those 8 KB (the digest up to 64 KB back, then the 56 KB's
// lines), in one request. Put where the first read's lines begin, they
// are exactly the plain read's lines: the 3,000-byte line the 8 KB
// boundary falls in is there once, whole. Through the fallback the next
// poll brings the lines without the digest; a truncated log brings none.
func TestTailBackfillThroughTheAgent(t *testing.T) {
	t.Parallel()
	py := testgate.Tool(t, "python3", "the old script's worker log")
	dir := t.TempDir()
	log := filepath.Join(dir, "inference_all.log")
	pyLog(t, py, log, 3<<20, 0)
	content, err := os.ReadFile(log)
	must(t, err)
	newTail := func(first int64) *Tail {
		tl := NewTail(log)
		tl.StartBack, tl.History, tl.Digest, tl.FirstBack = 64<<10, 1<<20-64<<10-1, parse.DigestWorker, first
		return tl
	}
	agent := func() *Agent {
		ag := NewAgent(Local{})
		ag.UseBinary(selfAsBinary(t))
		t.Cleanup(ag.Close)
		return ag
	}
	// poll runs one batch through run and reads it as a dashboard does
	poll := func(tl *Tail, digests bool, run func(*Batch) error) TailUpdate {
		t.Helper()
		b := &Batch{Digests: digests}
		b.Tail(tl)
		must(t, run(b))
		up := (&Poller{Tails: []*Tail{tl}, Asks: b.PollAsks()}).Poll(context.Background(), Local{}).Tails[0]
		if hits, misses := b.PollAsks().Counts(); up.Err != nil || misses != 0 || hits == 0 {
			t.Fatalf("%v; %d reads from the batch, %d not %v", up.Err, hits, misses, b.PollAsks().Missed())
		}
		return up
	}
	viaAgent := func(ag *Agent) func(*Batch) error {
		return func(b *Batch) error { _, err := ag.Run(context.Background(), b); return err }
	}
	viaFallback := func(b *Batch) error { return NewFallback(Local{}).Run(context.Background(), b) }
	text := func(ls []Line) string {
		var s strings.Builder
		for _, l := range ls {
			s.WriteString(l.Text + "\n")
		}
		return s.String()
	}
	str := string(content)
	lineAfter := func(back int) int { // where a read back bytes from the end begins
		return strings.IndexByte(str[len(str)-back-1:], '\n') + len(str) - back
	}
	long := "ValueError: " + strings.Repeat("x", 3000) + "\n"
	if at := strings.LastIndex(str, long); at >= len(str)-8<<10-1 || at+len(long) <= len(str)-8<<10-1 {
		t.Fatalf("the 3,000-byte line does not hold the 8 KB boundary")
	}

	plainAg, ag := agent(), agent()
	plain := newTail(0)
	today := poll(plain, true, viaAgent(plainAg)) // a plain first read: all 64 KB as they are
	bf := newTail(8 << 10)
	first := poll(bf, true, viaAgent(ag))
	if !first.OlderDue || first.Held == 0 || first.Held >= len(first.Lines) {
		t.Fatalf("first read: due %v, %d of %d lines held", first.OlderDue, first.Held, len(first.Lines))
	}
	// the fold's lines: the history digested up to the 8 KB, then those
	fold := string(parse.DigestLog(parse.DigestWorker, []byte(str[lineAfter(1<<20-1):lineAfter(8<<10)]))) + str[lineAfter(8<<10):]
	if text(first.Lines) != fold {
		t.Fatalf("the first read's lines are not the history digested up to the screen's bytes, then those")
	}
	if text(first.Lines[first.Held:]) != str[lineAfter(8<<10):] {
		t.Fatalf("the shown lines are not the last 8 KB's")
	}

	pyLog(t, py, log, 0, 300) // the log grows between the polls
	todayNext := poll(plain, true, viaAgent(plainAg))
	next := poll(bf, true, viaAgent(ag))
	if !next.OlderDone || len(next.Older) == 0 || next.OlderDue {
		t.Fatalf("next poll: done %v, %d older lines", next.OlderDone, len(next.Older))
	}
	want := text(today.Lines) + text(todayNext.Lines)
	got := text(next.Older) + text(first.Lines[first.Held:]) + text(next.Lines)
	if got != want {
		t.Fatalf("the pane's lines after the backfill (%d bytes) are not the plain read's (%d)", len(got), len(want))
	}
	if strings.Count(got, long) != 1 || len(todayNext.Lines) != 300 {
		t.Fatalf("the line at the boundary is there %d times; %d lines grew", strings.Count(got, long), len(todayNext.Lines))
	}
	if again := poll(bf, true, viaAgent(ag)); again.OlderDone || len(again.Older) != 0 {
		t.Fatalf("the backfill came twice")
	}

	// the next poll by the fallback: the lines as they are, no digest
	fb := newTail(8 << 10)
	poll(fb, true, viaAgent(agent()))
	content, err = os.ReadFile(log)
	must(t, err)
	str = string(content) // ends in a line being written: after the bytes compared
	fbNext := poll(fb, false, viaFallback)
	if !fbNext.OlderDone || text(fbNext.Older) != str[lineAfter(64<<10):lineAfter(8<<10)] {
		t.Fatalf("the fallback's backfill: done %v, %d lines", fbNext.OlderDone, len(fbNext.Older))
	}

	// a log truncated between the polls: its older bytes are gone
	tr := newTail(8 << 10)
	poll(tr, true, viaAgent(agent()))
	must(t, os.Truncate(log, 100))
	if up := poll(tr, true, viaAgent(agent())); !up.OlderDone || len(up.Older) != 0 || up.Event != TailTruncated {
		t.Fatalf("truncated: %v, done %v, %d older lines", up.Event, up.OlderDone, len(up.Older))
	}
}
