// Package events is the timeline's part of a poll: the host's zone, the
// link's changes and this machine's sleeps (Recorder), the events derived
// from the judgements (category_done, pipeline_done, gate_below: FoldDone)
// and the throughput's baseline (Baseline). The Watcher composes it.
package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
)

// The timeline is true after the fact: an event read from a log carries the
// log's own time (read in the host's time zone), and an event that a later
// read of the same log, or a later session, would make again carries a key,
// so the Timeline keeps it once.

// Recorder is the timeline's part of a poll: the host's zone (its part of
// the batch), the link's changes and this machine's sleeps, and the
// baselines of the events it derives, written to the timeline.
type Recorder struct {
	tl       *timeline.Timeline
	connWas  snapshot.LinkPhase // the link at the last poll
	dropsWas int
	errWas   string // the link error last written to the timeline
	everUp   bool   // the link has been up in this session
	slp      sleepState
	zone     *time.Location // the host's time zone (nil: not learnt yet)
	relearn  bool           // the link came back: learn the zone again
	readOnce bool           // the logs have been read once: what follows is news
	srvLast  time.Time      // the last server log line's own time, for lines without one
	cats     map[string]*catEvents
	pipeDone bool // pipeline_done was recorded and nothing has run since
}

// New is the timeline's part, writing to tl.
func New(tl *timeline.Timeline) *Recorder { return &Recorder{tl: tl} }

// ZoneDue: the host's zone is to be read in this poll's batch (once per
// connection).
func (e *Recorder) ZoneDue() bool { return e.zone == nil || e.relearn }

// LogsRead notes that the logs have been read once: a server log record
// without a time is news from now on (ServerTime).
func (e *Recorder) LogsRead() { e.readOnce = true }

// Waking: a sleep was recorded and the link is not back yet.
func (e *Recorder) Waking() bool { return e.slp.waking }

// catEvents is one category's baseline for category_done.
type catEvents struct {
	done     bool      // category_done recorded for the state it is in
	runAt    time.Time // when it was first seen being worked on in this session
	runLines int64     // its records then
	lastRate float64   // its rate at the last poll it ran
	below    bool      // its gate's pass rate was below the floor at the last judged poll
	behind   int       // polls it was done by worker.json while its file showed fewer records
}

// NoteConnection records disconnections and reconnections in the timeline.
// The host counts drops, so one that came and went between two polls is
// recorded too. The first connection of a session is no reconnection. A
// sleep is one "slept" event: the drops, reconnection and connection errors
// of its wake are folded into it.
func (e *Recorder) NoteConnection(c snapshot.Connection, now time.Time, h remote.Host) {
	if fold, back := e.noteSleep(h, now); fold {
		e.foldWake(c, back)
		return
	}
	up := c.State == snapshot.LinkConnected
	newDrops := c.Drops - e.dropsWas
	wasUp := e.everUp || e.dropsWas > 0
	// a link we last saw down has come back (at least before any new drop)
	if wasUp && e.connWas != "" && e.connWas != snapshot.LinkConnected && (newDrops > 0 || up) {
		e.tl.Note(now, "reconnect", "", "connected again")
		e.relearn = true
	}
	e.noteDrops(newDrops, c.Error, up, now)
	if up || c.Drops > 0 {
		e.everUp = true
	}
	if up {
		e.errWas = ""
	} else if newDrops > 0 {
		e.errWas = c.Error // already in the disconnect event
	}
	if !up {
		e.noteConnectError(c, now)
	}
	e.connWas, e.dropsWas = c.State, c.Drops
}

// foldWake takes in the link as a sleep's wake left it; back: the link
// has come back.
func (e *Recorder) foldWake(c snapshot.Connection, back bool) {
	if c.State.Up() || back {
		e.everUp, e.errWas = true, ""
	}
	e.connWas, e.dropsWas = c.State, c.Drops
	if back {
		e.connWas = snapshot.LinkConnected // this poll's view may predate the link's return
	}
}

// noteDrops records the drops since the last poll, each but the last (and
// that one too when the link is up) followed by its reconnection.
func (e *Recorder) noteDrops(drops int, reason string, up bool, now time.Time) {
	for i := 0; i < drops; i++ {
		back := i < drops-1 || up
		e.tl.Note(now, "disconnect", "", dropText(reason, back))
		if back {
			e.tl.Note(now, "reconnect", "", "connected again")
			e.relearn = true
		}
	}
}

// noteConnectError records why a link that is not up cannot connect (a
// dial, handshake or auth error): once per different error, not once per
// attempt.
func (e *Recorder) noteConnectError(c snapshot.Connection, now time.Time) {
	if c.State == snapshot.LinkLocal || c.Error == "" || c.Error == e.errWas {
		return
	}
	e.errWas = c.Error
	kind, text := "connect_error", "cannot connect: "+c.Error
	if c.State == snapshot.LinkFailed {
		kind, text = "connect_failed", text+" (not retried: fix it, then press C or start again)"
	} else if c.NextTry != nil {
		text += ", next try " + c.NextTry.Local().Format("15:04:05")
	}
	e.tl.Note(now, kind, "", text)
}

// dropText is a disconnect event's text; back: the link came back before
// this poll (the reason then is not known).
func dropText(reason string, back bool) string {
	switch {
	case reason != "" && !back:
		return "lost the link to the host: " + reason
	case back:
		return "lost the link to the host (back before the next poll)"
	}
	return "lost the link to the host"
}

// ZoneArgv prints the host's UTC offset and, where it has one, the name
// of its zone (the /etc/localtime link): remote's, which the Go agent
// answers in Go.
var ZoneArgv = remote.ZoneArgv

// ReadZone reads the host's time zone, once per connection: the poll's
// batch's answer (ask), or, when it did not answer, an exec of its own.
func ReadZone(ctx context.Context, h remote.Host, ask *remote.ExecAsk) (*time.Location, error) {
	res, ok := ask.Result()
	if !ok {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		if res, err = h.Exec(ctx, ZoneArgv...); err != nil {
			return nil, err
		}
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("date +%%z: exit %d", res.ExitCode)
	}
	return parseZone(string(res.Stdout), time.Now())
}

// isOffset: s is a UTC offset as date +%z prints it (+0100, -0530).
func isOffset(s string) bool { return len(s) == 5 && (s[0] == '+' || s[0] == '-') }

// parseZone reads zoneScript's output. A zone name this machine knows is
// used when it gives the same offset now (it then also knows the host's
// DST changes); otherwise the offset itself.
func parseZone(out string, now time.Time) (*time.Location, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// a login shell's rc may print first: the offset is the first line that is one
	for i, l := range lines {
		if isOffset(strings.TrimSpace(l)) {
			lines = lines[i:]
			break
		}
	}
	off := strings.TrimSpace(lines[0])
	if !isOffset(off) {
		return nil, fmt.Errorf("date +%%z printed %q", off)
	}
	h, err1 := strconv.Atoi(off[1:3])
	m, err2 := strconv.Atoi(off[3:5])
	if err1 != nil || err2 != nil || h > 23 || m > 59 {
		return nil, fmt.Errorf("date +%%z printed %q", off)
	}
	secs := (h*60 + m) * 60
	if off[0] == '-' {
		secs = -secs
	}
	if len(lines) > 1 {
		if i := strings.Index(lines[1], "zoneinfo/"); i >= 0 {
			if loc, err := time.LoadLocation(strings.TrimSpace(lines[1][i+len("zoneinfo/"):])); err == nil {
				if _, o := now.In(loc).Zone(); o == secs {
					return loc, nil
				}
			}
		}
	}
	return time.FixedZone("UTC"+off[:3]+":"+off[3:], secs), nil
}

// FoldZone takes what the zone read gave. A link that was down is asked
// again at the next poll; a host that cannot tell is read as this
// machine's zone.
func (e *Recorder) FoldZone(loc *time.Location, err error, asked bool) {
	switch {
	case !asked:
	case loc != nil:
		e.zone, e.relearn = loc, false
	case errors.Is(err, remote.ErrDisconnected) || errors.Is(err, context.Canceled):
	case e.zone == nil:
		e.zone = time.Local
	}
}

// HostZone is the host's zone, this machine's until it is known.
func (e *Recorder) HostZone() *time.Location {
	if e.zone != nil {
		return e.zone
	}
	return time.Local
}

// serverLineTime is when a server log record was written: a container
// runtime's timestamp (absolute), else the server's own, which is the
// host's wall clock read in its zone. A date without a year (vLLM) takes
// the year, and a bare time of day the day, that puts it at or just before
// ref, the log's last change. ok is false for a line without a time.
func serverLineTime(ev parse.ServerEvent, loc *time.Location, ref time.Time) (time.Time, bool) {
	if !ev.Wrap.Time.IsZero() {
		return ev.Wrap.Time, true
	}
	if !ev.HasPrefix {
		return time.Time{}, false
	}
	p := ev.Prefix.Time
	at := func(y int, mo time.Month, d int) time.Time {
		return time.Date(y, mo, d, p.Hour(), p.Minute(), p.Second(), p.Nanosecond(), loc)
	}
	r := ref.In(loc)
	switch {
	case ev.Prefix.HasYear:
		return at(p.Year(), p.Month(), p.Day()), true
	case ref.IsZero():
		return time.Time{}, false
	case ev.Prefix.HasDate:
		t := at(r.Year(), p.Month(), p.Day())
		if t.After(ref.Add(24 * time.Hour)) {
			t = at(r.Year()-1, p.Month(), p.Day())
		}
		return t, true
	}
	t := at(r.Year(), r.Month(), r.Day())
	if t.After(ref.Add(time.Hour)) {
		t = t.AddDate(0, 0, -1)
	}
	return t, true
}

// ServerTime stamps a server log record: its own time; a record without
// one gets the time of the line before it on a first read (or ref, the
// log's mtime), and now when it is news.
func (e *Recorder) ServerTime(ev parse.ServerEvent, ref, now time.Time) time.Time {
	if t, ok := serverLineTime(ev, e.HostZone(), ref); ok {
		e.srvLast = t
		return t
	}
	switch {
	case e.readOnce:
		return now
	case !e.srvLast.IsZero():
		return e.srvLast
	case !ref.IsZero():
		return ref
	}
	return now
}

// DoneInputs are what foldDone reads of the other parts, as values (no
// part is handed another): the categories and the worker as this poll
// judged them, the categories' file mtimes (by index), whether the
// manifest was read, worker.json, and what the log says of the end (its
// "All categories finished." and when it last grew).
type DoneInputs struct {
	Cats        []snapshot.Category
	Mtimes      []time.Time
	ManOK       bool
	Worker      snapshot.Worker
	WJSON       *parse.WorkerState
	LogFinished bool
	LogLast     time.Time
}

// FoldDone records category_done when a category reaches done and
// pipeline_done when the job has: every category done (none failed) and
// the worker exited with the job done, or the log's "All categories
// finished." (our worker writes it only when none failed). A
// category found done, or a job found finished, on a first read is stamped
// with its file's mtime; either way the key is the file's mtime, so that
// the next session finds the event already there.
func (e *Recorder) FoldDone(in DoneInputs, now time.Time) {
	cats, mtimes, wk, wjson := in.Cats, in.Mtimes, in.Worker, in.WJSON
	if e.cats == nil {
		e.cats = map[string]*catEvents{}
	}
	allFinal, records, last, behind := len(cats) > 0, int64(0), time.Time{}, false
	for i, v := range cats {
		ce := e.cats[v.Name]
		if ce == nil {
			ce = &catEvents{}
			e.cats[v.Name] = ce
		}
		allFinal = allFinal && snapshot.Final(v.State) && v.State != snapshot.StateFailed // a failed category is no job done
		mtime := mtimes[i]
		if mtime.After(last) {
			last = mtime
		}
		if v.State == snapshot.StateDone {
			records += v.Done
		}
		// worker.json says done with more records than the file showed:
		// the poll read the file before the worker's last append and
		// worker.json after it (the batch's reads run side by side). Its
		// done waits a poll for the count, not recorded one short for good.
		if js := wjson.CategoryNamed(v.Name); v.State == snapshot.StateDone && !ce.done && js != nil && int64(js.Done) > v.Done && ce.behind == 0 {
			ce.behind++
			behind = true
			e.foldGate(ce, v, now)
			continue
		}
		ce.behind = 0
		e.foldCategory(ce, v, mtime, wjson, now)
		e.foldGate(ce, v, now)
	}
	finished := allFinal && wk.State == snapshot.WorkerExited || in.LogFinished && !snapshot.Alive(wk.State)
	// a job whose manifest could not be read is not known to be done
	e.foldPipelineDone(finished && in.ManOK && !snapshot.Alive(wk.State) && !behind, records, last, in.LogLast, now)
}

// foldPipelineDone records pipeline_done once per finish, at the newest
// category file's mtime (else the log's last line), keyed by that mtime.
func (e *Recorder) foldPipelineDone(done bool, records int64, last, lastLine, now time.Time) {
	if !done || e.pipeDone {
		e.pipeDone = done
		return
	}
	e.pipeDone = true
	at := last
	if at.IsZero() {
		at = lastLine
	}
	e.tl.Add(snapshot.Event{Time: timeline.NotAfter(at, now).UTC(), Kind: "pipeline_done", Text: fmt.Sprintf("pipeline done: %d records", records),
		Key: fmt.Sprintf("pipeline_done|%d", last.UnixNano())})
}

// foldCategory follows one category from poll to poll: while it runs, the
// records and pace its run started from; once done, category_done (once
// per reaching done); any other state starts its run afresh.
func (e *Recorder) foldCategory(ce *catEvents, v snapshot.Category, mtime time.Time, wjson *parse.WorkerState, now time.Time) {
	switch v.State {
	case snapshot.StateRunning, snapshot.StateStalled:
		if ce.runAt.IsZero() {
			ce.runAt, ce.runLines = now, v.Done
		}
		if v.RatePerMin > 0 {
			ce.lastRate = v.RatePerMin
		}
		ce.done = false
	case snapshot.StatePending, snapshot.StateStopped, snapshot.StatePartial, snapshot.StateDied:
		ce.done, ce.runAt = false, time.Time{}
	case snapshot.StateDone:
		if ce.done {
			return
		}
		ce.done = true
		rate := ce.doneRate(v, wjson, now)
		text := fmt.Sprintf("%s done: %d records", v.Name, v.Done)
		if rate > 0 {
			text += fmt.Sprintf(" (%s, %.1f/min)", v.Class, rate)
		}
		e.tl.Add(snapshot.Event{Time: timeline.NotAfter(mtime, now).UTC(), Kind: "category_done", Category: v.Name, Text: parse.SanitizeString(text),
			Class: v.Class, RatePerMin: rate, Key: fmt.Sprintf("category_done|%s|%d|%d", v.Name, v.Done, mtime.UnixNano())})
		ce.runAt = time.Time{}
	}
}

// doneRate is the pace a category that is done last ran at (the rate
// window: stalls and crashes fall out of it); else its records by this
// run over the time it ran; else the worker's own figure.
func (ce *catEvents) doneRate(v snapshot.Category, wjson *parse.WorkerState, now time.Time) float64 {
	rate := ce.lastRate
	if mins := now.Sub(ce.runAt).Minutes(); rate == 0 && !ce.runAt.IsZero() && v.Done-ce.runLines >= 10 && mins > 0 {
		rate = float64(v.Done-ce.runLines) / mins
	}
	if js := wjson.CategoryNamed(v.Name); rate == 0 && js != nil {
		rate = js.Rate
	}
	return rate
}

// foldGate records gate_below when a category's pass rate falls below
// [gate] min_pass_rate (with min_records judged): once per fall, the
// first judged poll too.
func (e *Recorder) foldGate(ce *catEvents, v snapshot.Category, now time.Time) {
	g := v.Gate
	if g == nil {
		return
	}
	if g.Below && !ce.below {
		e.tl.Add(snapshot.Event{Time: now.UTC(), Kind: snapshot.EventGateBelow, Category: v.Name,
			Text: parse.SanitizeString(snapshot.GateBelowText(v.Name, *g))})
	}
	ce.below = g.Below
}
