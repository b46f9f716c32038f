package digest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// maxText caps an incident's text; remote text is sanitised before that.
const maxText = 240

// tpAcc sums one rank's throughput samples in one interval.
type tpAcc struct {
	sum, max float64
	n        int
}

// serverScan folds the server log.
type serverScan struct {
	d         *digester
	tp        []map[int]*tpAcc // per interval, per DP rank (or vLLM engine)
	lastTime  time.Time        // of the latest prefixed line: for records without one
	lastCrash time.Time
	ready     bool
	stopping  bool // a graceful stop (SIGTERM) was logged: its teardown is no crash
}

func (d *digester) readServerLog() error {
	sc := &serverScan{d: d, tp: make([]map[int]*tpAcc, len(d.s.Intervals))}
	var log parse.ServerLog
	path := filepath.Join(d.o.Root, filepath.FromSlash(parse.ServerLogPath))
	n, _, err := eachLine(path, func(line []byte, _ bool) {
		d.s.Server.Lines++
		log.Feed(string(line), sc.event)
	})
	log.Flush(sc.event)
	d.count(n, err)
	for i, ranks := range sc.tp {
		if len(ranks) == 0 {
			continue
		}
		t := &Throughput{}
		for _, a := range ranks {
			t.Mean += a.sum / float64(a.n)
			t.Max += a.max
			t.Samples += a.n
		}
		d.s.Intervals[i].Throughput = t
	}
	return err
}

// when is a line's time in the host's zone; ok is false for a line with
// no date (old SGLang), which cannot be placed in the window.
func (sc *serverScan) when(ev parse.ServerEvent) (time.Time, bool) {
	if !ev.HasPrefix || !ev.Prefix.HasDate {
		return time.Time{}, false
	}
	p := ev.Prefix.Time
	y := p.Year()
	now := sc.d.o.Now
	if !ev.Prefix.HasYear { // vLLM: the latest year that is not in the future
		y = now.Year()
		if time.Date(y, p.Month(), p.Day(), p.Hour(), p.Minute(), p.Second(), 0, now.Location()).After(now.Add(24 * time.Hour)) {
			y--
		}
	}
	return time.Date(y, p.Month(), p.Day(), p.Hour(), p.Minute(), p.Second(), p.Nanosecond(), sc.d.o.Loc), true
}

func (sc *serverScan) event(ev parse.ServerEvent) {
	d := sc.d
	t, dated := sc.when(ev)
	if dated {
		sc.lastTime = t
	} else if ev.Kind == parse.SBatch || ev.Kind == parse.SStats {
		d.s.Server.Undated++
		return
	} else {
		t = sc.lastTime // a record without a time of its own: the last one seen
	}
	slot := -1
	if !t.IsZero() {
		slot = d.slot(t)
	}
	switch {
	case ev.Kind == parse.SBatch && ev.Batch.Phase == parse.Decode && ev.Batch.GenThroughput.OK:
		sc.sample(slot, ev.Prefix.Ranks.DP, ev.Batch.GenThroughput.V)
	case ev.Kind == parse.SStats && ev.Stats.GenTokS.OK:
		rank := -2 // "N Engines Aggregated"
		if e, err := strconv.Atoi(ev.Stats.Engine); err == nil {
			rank = e
		}
		sc.sample(slot, rank, ev.Stats.GenTokS.V)
	case ev.Kind == parse.SRetract:
		if slot >= 0 {
			d.s.Intervals[slot].Retractions++
			d.s.Server.Retractions++
		}
	case ev.Kind == parse.SReady:
		kind, text := KindStart, "server ready"
		if sc.ready || !sc.lastCrash.IsZero() {
			kind, text = KindRestart, "server ready again"
			if !sc.lastCrash.IsZero() && !t.Before(sc.lastCrash) {
				text += fmt.Sprintf(", %s after the crash at %s", span(t.Sub(sc.lastCrash)), sc.lastCrash.Format("15:04:05"))
			}
		}
		sc.ready, sc.lastCrash, sc.stopping = true, time.Time{}, false
		if slot >= 0 {
			if kind == KindRestart {
				d.s.Server.Restarts++
			}
			d.inc.add(Incident{Time: t, Kind: kind, Text: text})
		}
	case ev.Kind == parse.SStop:
		sc.stopping = true
	case ev.Fault() == parse.FaultCrash && (sc.stopping && (ev.Kind == parse.SSigquit || ev.Kind == parse.SChildDied || ev.Kind == parse.SCrashTail) ||
		ev.Kind == parse.SCrashTail && !sc.lastCrash.IsZero()):
		// a stop's teardown, or the cleanup a dying server prints after its cause (the same rule as pipeline's foldServerEvent)
	case ev.Fault() == parse.FaultCrash:
		if sc.lastCrash.IsZero() {
			sc.lastCrash = t
		}
		if slot >= 0 {
			d.s.Server.Crashes++
			d.inc.add(Incident{Time: t, Kind: KindCrash, Text: crashText(ev)})
		}
	case ev.Kind == parse.SHealthFail:
		if slot >= 0 {
			d.inc.add(Incident{Time: t, Kind: KindHealthFail, Text: clip(ev.Msg)})
		}
	}
}

func (sc *serverScan) sample(slot, rank int, v float64) {
	if slot < 0 || v != v { // outside the window, or NaN
		return
	}
	if sc.tp[slot] == nil {
		sc.tp[slot] = map[int]*tpAcc{}
	}
	a := sc.tp[slot][rank]
	if a == nil {
		a = &tpAcc{}
		sc.tp[slot][rank] = a
	}
	a.sum += v
	a.n++
	a.max = max(a.max, v)
}

// crashText is the crash's head line and, from its traceback, the
// exception's own line (the last one), which says what happened.
func crashText(ev parse.ServerEvent) string {
	head := ev.Msg
	if i := strings.Index(head, ": Traceback"); i >= 0 {
		head = head[:i]
	}
	for i := len(ev.Lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(ev.Lines[i]); l != "" {
			head += " — " + l
			break
		}
	}
	if ev.OOM && !strings.Contains(head, "out of memory") {
		head += " (out of memory)"
	}
	return clip(head)
}

func clip(s string) string { return parse.SanitizeLine([]byte(s), maxText) }
