package digest

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Reading a record's stamp (parse.ParseRecordStamp: the whole line
// validated, a dozen members read) is most of a digest's time: a
// gigabyte of an old script's records took 2 s of one core. The lines
// are cut into batches that goroutines read side by side, while the
// fold, which keeps the file's order (stalls, the gate's fall, the runs'
// spans), takes their stamps in order on the caller's goroutine.

const (
	batchBytes = 1 << 20 // a batch's lines, about
	// inFlight bounds the batches read and not yet folded, in batchBytes:
	// 16 MB whatever the cores, or one line over that (maxLine) alone
	inFlight = 16
)

// lineStamp is one line's stamp, as record folds it.
type lineStamp struct {
	st       parse.RecordStamp
	err      error
	blank    bool
	complete bool
}

type stampBatch struct {
	buf   []byte
	ends  []int // each line's end in buf
	whole []bool
	out   []lineStamp
	cost  int // its tokens of the in-flight budget
	done  chan struct{}
}

func (b *stampBatch) read(loc *time.Location) {
	b.out = make([]lineStamp, len(b.ends))
	from := 0
	for i, end := range b.ends {
		line := b.buf[from:end]
		from = end
		o := &b.out[i]
		o.complete = b.whole[i]
		if len(bytes.TrimSpace(line)) == 0 {
			o.blank = true
			continue
		}
		o.st, o.err = parse.ParseRecordStamp(line, loc)
	}
	if buf := b.buf; cap(buf) == batchBytes {
		bufs.Put(&buf)
	}
	b.buf = nil
	close(b.done)
}

// bufs are batches' buffers, used again: a fresh megabyte a batch was
// cleared and copied into as it grew, a third of the read's time.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, batchBytes); return &b }}

func newBatch() *stampBatch {
	return &stampBatch{buf: (*bufs.Get().(*[]byte))[:0], done: make(chan struct{})}
}

// eachStamp is eachLine of path with each line's stamp read in loc, in the
// file's order: fn sees what record would have read, line by line. The
// stamps kept of the file (kp, nil: none) are replayed first, and the
// file read from where they end; what it read is kept in turn.
func eachStamp(path string, loc *time.Location, kp *kept, fn func(lineStamp)) (read, replayed int64, long int, err error) {
	defer kp.close()
	f, err := openFrom(path, 0)
	if f == nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	kp.check(f)
	from, keptLong := kp.replay(fn)
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return 0, from, keptLong, fmt.Errorf("digest: %w", err)
	}
	tokens := make(chan struct{}, inFlight)
	batches := make(chan *stampBatch, inFlight)
	take := func(b *stampBatch) {
		b.cost = min(max(len(b.buf)/batchBytes, 1), inFlight)
		for range b.cost {
			tokens <- struct{}{}
		}
		go b.read(loc)
		batches <- b
	}
	var sc lineScan
	go func() {
		defer close(batches)
		b := newBatch()
		sc, err = scanFile(f, path, from, func(line []byte, complete bool) {
			if len(b.buf) > 0 && len(b.buf)+len(line) > batchBytes {
				take(b)
				b = newBatch()
			}
			b.buf = append(b.buf, line...)
			b.ends, b.whole = append(b.ends, len(b.buf)), append(b.whole, complete)
		})
		if len(b.ends) > 0 {
			take(b)
		}
	}()
	for b := range batches {
		<-b.done
		for _, s := range b.out {
			fn(s)
			if s.complete {
				kp.note(s)
			}
		}
		for range b.cost {
			<-tokens
		}
	}
	if err == nil { // sc and err were set before batches was closed
		kp.save(f, sc.end, sc.longWhole)
	}
	return sc.read, from, keptLong + sc.long, err
}
