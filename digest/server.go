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
	d        *digester
	tp       []map[int]*tpAcc // per interval, per DP rank (or vLLM engine)
	lastTime time.Time        // of the latest prefixed line: for records without one
	ready    bool
	stopping bool // a graceful stop (SIGTERM) was logged: its teardown is no crash
	// down is the outage under way (nil: none): from its first failed
	// witness; lastAlive the latest line that showed the server working
	down      *Incident
	lastAlive time.Time
	// fails are failed health checks since the server last worked: the
	// start of an outage if one follows, incidents of their own if not
	fails []Incident
}

// readServerLog starts the scan of the server log; the func it returns
// waits for the scan's end and closes what it left open.
func (d *digester) readServerLog() func() error {
	sc := &serverScan{d: d, tp: make([]map[int]*tpAcc, len(d.s.Intervals))}
	done := make(chan struct{})
	var n int64
	var err error
	go func() {
		defer close(done)
		var log parse.ServerLog
		path := filepath.Join(d.o.Root, filepath.FromSlash(parse.ServerLogPath))
		n, _, err = eachLine(path, func(line []byte, _ bool) {
			d.s.Server.Lines++
			log.Feed(string(line), sc.event)
		})
		log.Flush(sc.event)
		sc.flushFails()
	}()
	return func() error {
		<-done
		d.endServerLog(sc)
		d.count(n, err)
		return err
	}
}

// endServerLog closes what the server log's scan left open, once the
// records are read too: an outage the log never saw end, and the
// intervals' throughput.
func (d *digester) endServerLog(sc *serverScan) {
	if sc.down != nil { // not ready again when the log ends
		if at, n := d.recordsAfter(sc.down.Time); n > 0 {
			// records say the server served again (its log elsewhere, or a
			// restart that logged no ready line): the outage ended at the first
			sc.down.End = &at
			sc.down.Text += fmt.Sprintf("; no ready line since, but %s written after it, the first in the minute of %s (inferred)", parse.Plural(n, "record"), at.Format("15:04"))
		} else {
			sc.down.Still = true
			sc.down.Text += "; not ready again when the log ends"
		}
		sc.addOutage(*sc.down)
	}
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
}

// recordsAfter is the start of the first minute wholly after t that holds
// records of the window, and how many records the window holds from it on
// (0: none).
func (d *digester) recordsAfter(t time.Time) (first time.Time, n int64) {
	from := int32(t.Sub(d.start)/time.Minute) + 1
	firstM := int32(-1)
	for _, acc := range d.s.byName {
		for m, k := range acc.minutes {
			if m >= from && k > 0 {
				n += k
				if firstM < 0 || m < firstM {
					firstM = m
				}
			}
		}
	}
	if n == 0 {
		return time.Time{}, 0
	}
	return d.start.Add(time.Duration(firstM) * time.Minute), n
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

// serverRecord is a server log record placed in the window: its time
// (the last dated record's when it has none) and its interval (-1: none).
type serverRecord struct {
	ev    parse.ServerEvent
	t     time.Time
	dated bool
	slot  int
}

// serverScanFold folds one placed record into the scan.
type serverScanFold func(sc *serverScan, r serverRecord)

// faultScans: the records that tell of the server's life by their fault
// class (pipeline's foldServerEvent reads the same log the same way).
var faultScans = map[parse.Fault]serverScanFold{
	parse.FaultCrash: (*serverScan).crash,
	parse.FaultHang:  (*serverScan).hang,
}

// kindScans: the other records, by kind.
var kindScans = map[parse.ServerKind]serverScanFold{
	parse.SBatch:      (*serverScan).batch,
	parse.SStats:      (*serverScan).stats,
	parse.SAccess:     (*serverScan).access,
	parse.SRetract:    (*serverScan).retract,
	parse.SReady:      func(sc *serverScan, r serverRecord) { sc.readyAt(r.t, r.slot) },
	parse.SStop:       (*serverScan).stop,
	parse.SStartup:    (*serverScan).startup,
	parse.SHealthFail: (*serverScan).healthFail,
}

func (sc *serverScan) event(ev parse.ServerEvent) {
	r, ok := sc.place(ev)
	if !ok {
		return
	}
	if fold, ok := faultScans[ev.Fault()]; ok {
		fold(sc, r)
	} else if fold, ok := kindScans[ev.Kind]; ok {
		fold(sc, r)
	}
	if r.dated && sc.down == nil && (ev.Kind == parse.SBatch || ev.Kind == parse.SStats || ev.Kind == parse.SAccess) {
		sc.lastAlive = r.t
		sc.flushFails()
	}
}

// place dates a record and finds its interval. A periodic line without a
// time of its own is only counted: its figures belong to no interval.
func (sc *serverScan) place(ev parse.ServerEvent) (serverRecord, bool) {
	r := serverRecord{ev: ev, slot: -1}
	r.t, r.dated = sc.when(ev)
	switch {
	case r.dated:
		sc.lastTime = r.t
	case ev.Kind == parse.SBatch || ev.Kind == parse.SStats:
		sc.d.s.Server.Undated++
		return r, false
	default:
		r.t = sc.lastTime // a record without a time of its own: the last one seen
	}
	if !r.t.IsZero() {
		r.slot = sc.d.slot(r.t)
	}
	return r, true
}

func (sc *serverScan) batch(r serverRecord) {
	if b := r.ev.Batch; b.Phase == parse.Decode && b.GenThroughput.OK {
		sc.sample(r.slot, r.ev.Prefix.Ranks.DP, b.GenThroughput.V)
	}
}

func (sc *serverScan) stats(r serverRecord) {
	if !r.ev.Stats.GenTokS.OK {
		return
	}
	rank := -2 // "N Engines Aggregated"
	if e, err := strconv.Atoi(r.ev.Stats.Engine); err == nil {
		rank = e
	}
	sc.sample(r.slot, rank, r.ev.Stats.GenTokS.V)
}

func (sc *serverScan) access(r serverRecord) {
	if r.dated && r.slot >= 0 && isAnswer(r.ev.Access) {
		sc.d.s.Intervals[r.slot].Answers++
	}
}

func (sc *serverScan) retract(r serverRecord) {
	if r.slot >= 0 {
		sc.d.s.Intervals[r.slot].Retractions++
		sc.d.s.Server.Retractions++
	}
}

func (sc *serverScan) stop(r serverRecord) {
	sc.stopping = true
	sc.goDown(r.t, "stopped (SIGTERM: a graceful stop)", false)
}

func (sc *serverScan) crash(r serverRecord) {
	k := r.ev.Kind
	if sc.stopping && (k == parse.SSigquit || k == parse.SChildDied || k == parse.SCrashTail) || sc.down != nil {
		// a stop's teardown, or the cleanup a dying server prints after its
		// cause (the rule of pipeline's foldServerEvent): one crash, once
		return
	}
	from := r.t
	if len(sc.fails) > 0 { // the first failed witness
		from = sc.fails[0].Time
	}
	sc.fails = nil
	sc.goDown(from, "crash: "+crashText(r.ev), true)
}

func (sc *serverScan) startup(r serverRecord) {
	sc.d.noteLaunch(r)
	if sc.ready && sc.down == nil && !sc.lastAlive.IsZero() {
		sc.goDown(sc.lastAlive, "no crash logged: the log went quiet, then the server started again", false)
	}
}

func (sc *serverScan) hang(r serverRecord) {
	if r.slot >= 0 {
		sc.d.inc.add(Incident{Time: r.t, Kind: KindHang, Text: clip("the server makes no progress: " + r.ev.Msg)})
	}
}

func (sc *serverScan) healthFail(r serverRecord) {
	if sc.down == nil && r.slot >= 0 {
		sc.fails = append(sc.fails, Incident{Time: r.t, Kind: KindHealthFail, Text: clip(r.ev.Msg)})
	}
}

// goDown starts an outage at from unless one is under way.
func (sc *serverScan) goDown(from time.Time, cause string, crash bool) {
	if sc.down != nil || from.IsZero() {
		return
	}
	sc.down = &Incident{Time: from, Kind: KindOutage, Text: clip("server down: " + cause)}
	if crash && sc.d.inWindow(from) {
		sc.d.s.Server.Crashes++
	}
}

// readyAt is a ready line: the end of an outage, a restart, or the start.
func (sc *serverScan) readyAt(t time.Time, slot int) {
	d := sc.d
	switch {
	case sc.down != nil:
		out := *sc.down
		out.End = &t
		out.Text += "; ready again at " + t.Format("15:04:05")
		sc.addOutage(out)
		if slot >= 0 {
			d.s.Server.Restarts++
		}
	case slot < 0:
	case sc.ready:
		d.s.Server.Restarts++
		d.inc.add(Incident{Time: t, Kind: KindRestart, Text: "server ready again"})
	default:
		d.inc.add(Incident{Time: t, Kind: KindStart, Text: "server ready"})
	}
	sc.ready, sc.down, sc.stopping, sc.lastAlive, sc.fails = true, nil, false, t, nil
}

// addOutage keeps an outage for the stalls it explains, and as an
// incident when it touches the window.
func (sc *serverScan) addOutage(out Incident) {
	d := sc.d
	d.outages = append(d.outages, out)
	if out.Time.After(d.o.Now) || out.End != nil && out.End.Before(d.start) {
		return
	}
	d.inc.add(out)
}

// flushFails keeps failed health checks that no outage followed.
func (sc *serverScan) flushFails() {
	for _, f := range sc.fails {
		sc.d.inc.add(f)
	}
	sc.fails = nil
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
