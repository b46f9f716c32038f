package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// A worker log's first read through the Go agent: the history comes
// digested and the last StartBack bytes as they are. The lines are the
// plain read's lines less the middles of progress runs, in order, the
// pane's part whole; the answer is a small share of the plain one. The
// fallback's answer holds no digest, and its tail reads it all.
func TestTailDigestThroughTheAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "inference_all.log")
	var w strings.Builder
	for c := 0; w.Len() < 3<<20; c++ {
		fmt.Fprintf(&w, "Processing: B%d_cat (SHORT)\nB%d_cat: 9000 prompts\n", c, c)
		for k := 50; k <= 9000 && w.Len() < 3<<20; k += 50 {
			fmt.Fprintf(&w, "%d/9000 (%d err) %d.%d req/s avg_comp=%dtok ETA=%dm\n", k, k/3000, 8+k%5, k%10, 200+k%97, (9000-k)/500)
			if k%2500 == 0 {
				w.WriteString("Traceback (most recent call last):\n  File \"w.py\", line 3\nValueError: boom\n")
			}
		}
	}
	must(t, os.WriteFile(log, []byte(w.String()), 0o644))
	newTail := func() *Tail {
		tl := NewTail(log)
		tl.StartBack, tl.History, tl.Digest = 64<<10, 1<<20-64<<10-1, parse.DigestWorker
		return tl
	}

	plain := newTail()
	want := plain.Poll(context.Background(), Local{}) // no digester: StartBack+History as they are
	if want.Err != nil || len(want.Lines) < 10000 {
		t.Fatalf("plain read: %v, %d lines", want.Err, len(want.Lines))
	}

	ag := NewAgent(Local{})
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	dg := newTail()
	b := &Batch{Digests: true}
	ask := b.Tail(dg)
	if _, err := ag.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if !ask.Answered() || ask.ans.digest == nil {
		t.Fatal("the agent sent no digest")
	}
	got := (&Poller{Tails: []*Tail{dg}, Asks: b.PollAsks()}).Poll(context.Background(), Local{}).Tails[0]
	if got.Err != nil || got.Event != TailAttached {
		t.Fatalf("digested read: %v %v", got.Err, got.Event)
	}
	if hits, misses := b.PollAsks().Counts(); misses != 0 || hits == 0 {
		t.Errorf("the poll asked the host again: %d reads from the batch, %d not %v", hits, misses, b.PollAsks().Missed())
	}
	text := func(ls []Line) []string {
		out := make([]string, len(ls))
		for i, l := range ls {
			out[i] = l.Text
		}
		return out
	}
	wl, gl := text(want.Lines), text(got.Lines)
	// the plain read's lines start after the line its first byte falls
	// in, the pane's part likewise 64 KB from the end: the digest of the
	// lines between, then the pane's lines as they are
	content := w.String()
	lineAfter := func(back int) int {
		return strings.IndexByte(content[len(content)-back-1:], '\n') + len(content) - back
	}
	hist, pane := content[lineAfter(1<<20-1):lineAfter(64<<10)], content[lineAfter(64<<10):]
	expect := string(parse.DigestLog(parse.DigestWorker, []byte(hist))) + pane
	if strings.Join(gl, "\n")+"\n" != expect {
		t.Fatalf("digested lines (%d) are not the plain lines (%d) digested up to the pane's 64 KB", len(gl), len(wl))
	}
	if strings.Join(wl, "\n")+"\n" != hist+pane {
		t.Fatalf("the plain read is not the megabyte's lines")
	}
	if len(gl) > len(wl)/3 {
		t.Errorf("%d of %d lines: the history was not thinned", len(gl), len(wl))
	}
	if got.Size != want.Size || dg.Offset() != plain.Offset() {
		t.Errorf("the tails stand apart: size %d/%d, offset %d/%d", got.Size, want.Size, dg.Offset(), plain.Offset())
	}

	// the fallback's answer: no digest, the tail reads the megabyte
	fb := newTail()
	b = &Batch{}
	ask = b.Tail(fb)
	if err := NewFallback(Local{}).Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if !ask.Answered() || ask.ans.digest != nil {
		t.Fatal("the fallback's answer holds a digest")
	}
	all := (&Poller{Tails: []*Tail{fb}, Asks: b.PollAsks()}).Poll(context.Background(), Local{}).Tails[0]
	if strings.Join(text(all.Lines), "\n") != strings.Join(wl, "\n") {
		t.Errorf("the fallback's tail: %d lines, want the plain %d", len(all.Lines), len(wl))
	}
	// the next poll reads only what is new, as a plain tail does
	f, _ := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("9050/9100 (3 err) 9.1 req/s avg_comp=210tok ETA=1m\n")
	f.Close()
	next := dg.Poll(context.Background(), Local{})
	if len(next.Lines) != 1 || !strings.HasPrefix(next.Lines[0].Text, "9050/9100") {
		t.Errorf("next poll: %+v", next.Lines)
	}
}

// A line longer than the line bound where the history meets the pane's
// part (the attach falls in it, its newline past the bound): the digest
// carries it cut at the bound, as a plain read's splitter cuts it, never
// dropped by both parts.
func TestTailDigestLongLineAtTheBoundary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "inference_all.log")
	var w strings.Builder
	w.WriteString("Processing: B1_glaive (SHORT)\n")
	for k := 1; w.Len() < 300<<10; k++ {
		fmt.Fprintf(&w, "%d/90000 (0 err) 9.%d req/s avg_comp=210tok ETA=9m\n", k, k%10)
	}
	w.WriteString("B1_glaive: id 7 failed: 400 " + strings.Repeat("b", 200<<10) + "\n")
	for k := 0; k < 100; k++ {
		fmt.Fprintf(&w, "%d/90000 (1 err) 9.1 req/s avg_comp=210tok ETA=8m\n", 90000-k)
	}
	must(t, os.WriteFile(log, []byte(w.String()), 0o644))
	newTail := func() *Tail {
		tl := NewTail(log)
		tl.StartBack, tl.History, tl.Digest = 64<<10, 1<<20-64<<10-1, parse.DigestWorker
		return tl
	}
	has := func(ls []Line) bool {
		for _, l := range ls {
			if strings.HasPrefix(l.Text, "B1_glaive: id 7 failed") {
				return true
			}
		}
		return false
	}
	if !has(newTail().Poll(context.Background(), Local{}).Lines) {
		t.Fatal("the plain read lost the long line")
	}
	ag := NewAgent(Local{})
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	dg := newTail()
	b := &Batch{Digests: true}
	b.Tail(dg)
	if _, err := ag.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got := (&Poller{Tails: []*Tail{dg}, Asks: b.PollAsks()}).Poll(context.Background(), Local{}).Tails[0]; !has(got.Lines) {
		t.Fatalf("the digested read lost the long line (%d lines)", len(got.Lines))
	}
}
