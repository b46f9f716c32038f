package remote

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// TailEvent is what happened to a tailed file in a poll.
type TailEvent int

const (
	TailNone      TailEvent = iota
	TailAttached            // first sight of the file
	TailTruncated           // size fell below the offset: read again from 0
	TailReplaced            // the first bytes changed: a new file, read from 0
	TailMissing             // the file is gone (it may come back)
)

func (e TailEvent) String() string {
	return [...]string{"", "attached", "truncated", "replaced", "missing"}[e]
}

// Line is one whole line from a tailed file, as raw bytes turned string; the
// display sanitises it.
type Line struct {
	Text      string
	Truncated bool // longer than the splitter's cap
}

// Tail follows one file by byte offset, keeping the partial last line
// between polls, so a poll reads only new bytes.
type Tail struct {
	Path       string
	StartBack  int64 // on first attach, start this many bytes before the end
	MaxPerPoll int64 // read at most this many bytes per poll
	MaxLine    int   // cap one line (parse.DefaultMaxLine if 0)
	// Jump: when more is new than a poll reads, skip to the newest bytes
	// (TailUpdate.Skipped says how many were passed), as tail -f does,
	// rather than crawl MaxPerPoll a poll behind a burst (1 GB written at
	// once was half an hour behind). For a log on screen, not for a file
	// whose every line counts.
	Jump bool
	// Digest (a parse.Digest name) and History: on a first attach through
	// a reader that digests (the Go agent's taild), the History bytes
	// before StartBack's reach come as a digest of their lines, the rest
	// as they are; any other reader reads StartBack+History as they are.
	Digest  string
	History int64
	// FirstBack (under StartBack): on such a first attach, only the last
	// FirstBack bytes come as they are (the history's digest reaching up
	// to them), and the rest of StartBack a poll after, as a backfill
	// (TailUpdate.Older): a pane's first screen costs its screen's bytes.
	FirstBack int64

	digested  []byte // this attach's digest, when one answered (Poller)
	fill      *backfill
	off       int64
	head      []byte // the file's first bytes, to notice a replacement
	attached  bool
	skipFirst bool // started mid-file: drop the first, partial line
	split     *parse.Splitter
	ahead     readAhead
}

const headLen = 64

// NewTail follows path, starting near the end on first attach.
func NewTail(path string) *Tail {
	return &Tail{Path: path, StartBack: 256 << 10, MaxPerPoll: 1 << 20}
}

// Offset is the next byte to read.
func (t *Tail) Offset() int64 { return t.off }

// TailUpdate is the result of one poll of a Tail.
type TailUpdate struct {
	Path    string
	Lines   []Line
	Event   TailEvent
	Size    int64
	ModTime time.Time
	Behind  int64 // bytes on the host not read yet (the per-poll cap)
	Skipped int64 // bytes jumped over, never read (Tail.Jump)
	Err     error
	// Starts: on a first attach through the agent, a server log's start
	// lines before the history read (remote/starts.go)
	Starts []string
	// OlderDue: this attach's first read sent only FirstBack bytes as
	// they are; its first Held lines are the digest of all before them
	// (to fold, not to show). A later poll brings, in Older, what a plain
	// attach would have shown before them (the digest of the history up
	// to StartBack, then those bytes' lines); OlderDone says it came, or
	// never will (the file was truncated or replaced).
	OlderDue  bool
	Held      int
	Older     []Line
	OlderDone bool
}

// plan decides what to read given the file's stat; it returns the range to
// read (n == 0: nothing) and whether to read the head to check for a
// replacement.
func (t *Tail) plan(fi FileInfo, statErr error, up *TailUpdate) (off int64, n int64, checkHead bool) {
	if t.split == nil {
		t.split = parse.NewSplitter(t.MaxLine)
	}
	if statErr != nil {
		if errors.Is(statErr, fs.ErrNotExist) {
			if t.attached {
				up.Event = TailMissing
			}
			t.attached, t.off, t.head = false, 0, nil
			t.split.Reset()
			t.dropFill(up)
			return 0, 0, false
		}
		up.Err = statErr
		return 0, 0, false
	}
	up.Size, up.ModTime = fi.Size, fi.ModTime
	if !t.attached {
		t.attach(fi.Size, up)
	}
	if fi.Size < t.off {
		up.Event = TailTruncated
		t.off, t.head, t.skipFirst = 0, nil, false
		t.split.Reset()
		t.dropFill(up)
	}
	if fi.Size == t.off {
		return 0, 0, false
	}
	if t.Jump && fi.Size-t.off > t.MaxPerPoll && len(t.head) > 0 {
		t.jump(fi.Size-t.MaxPerPoll, up)
	}
	n = min(fi.Size-t.off, t.MaxPerPoll)
	return t.off, n, t.off > 0 || len(t.head) > 0
}

// attach starts t near the end of a file of size bytes.
func (t *Tail) attach(size int64, up *TailUpdate) {
	t.attached, up.Event = true, TailAttached
	// start one byte early: if that byte is a newline, the first line is whole
	back := t.StartBack + t.History
	if t.digested != nil {
		back = t.screen() // the history came digested
	}
	t.off = max(0, size-back-1)
	t.skipFirst = t.off > 0
	t.head, t.fill = nil, nil
	if from := max(0, size-t.StartBack-1); t.digested != nil && back < t.StartBack && from < t.off {
		t.fill = &backfill{from: from, to: t.off}
		up.OlderDue = true
	}
}

// jump moves t to off, past bytes it will never read: the partial line it
// carried and the one off falls in are dropped with them. Only a file
// whose head is known jumps, so a replacement is still noticed.
func (t *Tail) jump(off int64, up *TailUpdate) {
	up.Skipped = off - t.off + int64(t.split.Pending())
	t.off, t.skipFirst = off, true
	t.split.Reset()
	if t.fill != nil && !t.fill.cutDone {
		// the line the first read started in goes with the burst: the
		// backfill's last bytes are a partial line, never shown
		t.fill.cut, t.fill.cutDone = nil, true
	}
}

// apply folds the bytes read into lines. head is the file's first bytes
// when they were read.
func (t *Tail) apply(data, head []byte, size int64, up *TailUpdate) {
	if head != nil {
		h := head[:min(len(head), headLen)]
		known := t.head[:min(len(t.head), len(h))]
		if len(t.head) > 0 && !bytes.Equal(known, h[:len(known)]) {
			up.Event = TailReplaced
			t.off, t.head, t.skipFirst = 0, nil, false
			t.split.Reset()
			t.dropFill(up)
			return // read again from 0 at the next poll
		}
		if len(h) > len(t.head) {
			t.head = append(t.head[:0], h...)
		}
	}
	if t.off == 0 && len(t.head) < headLen {
		t.head = append(t.head[:0], data[:min(len(data), headLen)]...)
	}
	t.off += int64(len(data))
	up.Behind = size - t.off
	if t.skipFirst {
		i := bytes.IndexByte(data, '\n')
		t.fill.addCut(data, i, t.maxLine())
		if i < 0 {
			return
		}
		data, t.skipFirst = data[i+1:], false
	}
	t.split.Feed(data, func(l []byte, truncated bool) {
		up.Lines = append(up.Lines, Line{Text: string(l), Truncated: truncated})
	})
}

// Poll reads what is new in one file (a batch of one; see Poller for many).
func (t *Tail) Poll(ctx context.Context, h Host) TailUpdate {
	p := Poller{Tails: []*Tail{t}}
	return p.Poll(ctx, h).Tails[0]
}
