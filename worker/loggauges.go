package worker

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// logGauges reads the server's gauges from its log when /metrics is not
// served (SGLang without --enable-metrics): the scheduler's batch lines
// ("Decode batch. #running-req: 72, #token: 181,000, token usage: 0.96, …
// #queue-req: 3") and its retractions ("KV cache pool is full. Retract
// requests. #retracted_reqs: 4, …"), parsed by parse.ServerLog. The log
// is followed from where it ended when the worker first looked; a rotated
// or truncated log is followed from its start. One reader serves every
// category: what it gives is the state of the last lines, not what one
// caller has not yet seen.
type logGauges struct {
	path string

	mu       sync.Mutex
	dev, ino uint64
	off      int64 // just past the last whole line fed
	started  bool
	carry    []byte
	parser   parse.ServerLog
	ranks    map[string]rankGauges  // by DP rank or vLLM engine: the newest line
	retract  float64                // requests retracted since the worker began reading
	gen      parse.LoggedGeneration // the decode lines' throughput integrated: the meter's tokens without /metrics
}

type rankGauges struct {
	at                     time.Time
	running, queued, usage float64
}

// maxLogRead bounds one read: a log that grew more than this since the
// last look is read from its last maxLogRead bytes.
const maxLogRead = 8 << 20

func newLogGauges(path string) *logGauges {
	return &logGauges{path: path, ranks: map[string]rankGauges{}}
}

// read takes in the lines written since the last read and returns the
// gauges of the ranks that logged a batch line within fresh; OK is false
// when none did (the log is missing, idle or of another kind).
func (l *logGauges) read(now time.Time, fresh time.Duration) Gauges {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.follow(now); err != nil {
		return Gauges{}
	}
	var g Gauges
	for _, r := range l.ranks {
		if now.Sub(r.at) > fresh {
			continue
		}
		g.OK = true
		g.Running += r.running
		g.Queued += r.queued
		g.Usage = max(g.Usage, r.usage)
	}
	g.Retracted = l.retract
	g.FromLog = true
	return g
}

// generated is the tokens the server's decode lines say it generated since
// the worker first looked, and how many lines added to it; false when the
// log cannot be read.
func (l *logGauges) generated(now time.Time) (float64, int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.follow(now); err != nil {
		return 0, 0, false
	}
	return l.gen.Tokens, l.gen.Lines, true
}

// follow feeds the new whole lines of the log to the parser.
func (l *logGauges) follow(now time.Time) error {
	f, err := openInput(l.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			l.started = true // a log that appears later is new: read it from its start
		}
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	var dev, ino uint64
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(sys.Dev), sys.Ino
	}
	size := st.Size()
	switch {
	case !l.started: // the past is not the server's state now
		l.started, l.off = true, size
	case dev != l.dev || ino != l.ino || size < l.off: // rotated or truncated
		l.off, l.carry, l.parser = 0, nil, parse.ServerLog{}
	}
	l.dev, l.ino = dev, ino
	if size-l.off > maxLogRead {
		l.off, l.carry = size-maxLogRead, nil
	}
	buf := make([]byte, size-l.off)
	n, err := f.ReadAt(buf, l.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		l.carry = append(l.carry, buf...)
		l.off += int64(n)
		return nil
	}
	text := append(l.carry, buf[:end]...)
	l.carry = append([]byte(nil), buf[end+1:]...)
	l.off += int64(n)
	if len(l.carry) > maxLogRead {
		l.carry = nil
	}
	for _, line := range bytes.Split(text, []byte("\n")) {
		l.parser.Feed(string(line), func(ev parse.ServerEvent) { l.take(ev, now) })
	}
	return nil
}

// take keeps what one parsed line says about the scheduler's state.
func (l *logGauges) take(ev parse.ServerEvent, now time.Time) {
	switch ev.Kind {
	case parse.SBatch:
		b := ev.Batch
		if !b.RunningReqs.OK || !b.QueueReqs.OK {
			return // without the queue, no line says whether the server is full
		}
		r := rankGauges{at: now, running: float64(b.RunningReqs.V), queued: float64(b.QueueReqs.V), usage: b.TokenUsage.V}
		if b.Phase == parse.Prefill && b.NewSeq.OK {
			// scheduler.py log_prefill_stats: #running-req is the batch
			// before this prefill's new requests join it
			r.running += float64(b.NewSeq.V)
		}
		rank := "dp" + strconv.Itoa(ev.Prefix.Ranks.DP) + "/" + strconv.Itoa(b.GPUID)
		l.ranks[rank] = r
		if b.Phase != parse.Prefill && b.GenThroughput.OK && ev.HasPrefix && !ev.Prefix.Time.IsZero() {
			l.gen.Add(rank, ev.Prefix.Time, b.GenThroughput.V)
		}
	case parse.SStats: // vLLM: "Running: 72 reqs, Waiting: 3 reqs, GPU KV cache usage: 96.0%"
		s := ev.Stats
		if !s.Running.OK || !s.Waiting.OK {
			return
		}
		l.ranks["engine"+s.Engine] = rankGauges{at: now, running: float64(s.Running.V), queued: float64(s.Waiting.V), usage: s.KVUsagePct.V / 100}
	case parse.SRetract:
		// retract_decode's line; the oldest form ("Decode out of memory
		// happened") names no count: one retraction
		l.retract += float64(max(ev.Retract.Requests, 1))
	}
}
