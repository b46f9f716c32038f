package servers

import (
	"context"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/display"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// Spec is one server the watcher watches on the host.
type Spec struct {
	URL    string // as seen from the host
	Log    string // its log on the host (absolute, or relative to the root); "" none
	Router bool   // SGLang's router (sgl-router / model gateway); also detected
	// Metrics is the router's Prometheus listener; default the router's host
	// at port 29000 (parse.RouterDefaultMetricsPort)
	Metrics string
	// rooted: Log already includes the root (Options.ServerLog is made from
	// it); joining a relative root to it again would lose the log.
	rooted bool
	// From says why this URL is the one probed: "flag --server-url",
	// "env SYNTHWATCH_SERVER_URL", "config.toml", "pipeline.toml server",
	// "pipeline.toml servers", "default".
	From string
}

// srvWatch is what the watcher keeps of one server between polls.
type srvWatch struct {
	spec     Spec
	name     string // host:port, for lines and events
	role     string
	st       serverState
	tail     *remote.Tail // nil: no log
	parser   parse.ServerLog
	metFails int                  // consecutive failures of the same kind: a missing /metrics is asked less often
	was      snapshot.ServerState // the state last poll, for events
	detectAt int                  // the poll /workers was last asked, to find a router nobody configured
	rt       *routerWatch
	launches []parse.ServerLaunch // its log's start lines, for the eras (pipeline/counts/eras.go)
	pane     display.Pane         // where its log's older lines go in the shared ring when they come
}

// newSrvWatch makes a server's state; its log relative to root.
func newSrvWatch(sp Spec, root string, pane int64) *srvWatch {
	s := &srvWatch{spec: sp, name: shortURL(sp.URL), role: snapshot.RoleServer, detectAt: -detectEvery}
	if sp.Log != "" {
		if !path.IsAbs(sp.Log) && !sp.rooted {
			sp.Log = path.Join(root, sp.Log)
			s.spec.Log = sp.Log
		}
		s.tail = remote.NewTail(sp.Log)
		s.tail.Jump = true // a burst skips to its newest lines, said in the pane
		// 256 KB back, as a plain tail reads it; the Go agent sends all but
		// the pane's last kilobytes digested (decode and access lines thinned
		// where no judgement can tell: TestServerDigestDecidesAsTheLog)
		back := s.tail.StartBack
		s.tail.StartBack, s.tail.Digest = pane, parse.DigestServer
		s.tail.History = back - s.tail.StartBack
		if pane > display.FirstBehindTab { // a dashboard's: what a tab shows first, the rest a poll after
			s.tail.FirstBack = display.FirstBehindTab
		}
	}
	if sp.Router {
		s.becomeRouter()
	}
	return s
}

func (s *srvWatch) becomeRouter() {
	s.role = snapshot.RoleRouter
	if s.rt == nil {
		s.rt = &routerWatch{replicas: map[string]*srvWatch{}}
	}
}

// shortURL is a URL as a line shows it: host:port.
func shortURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return u
	}
	return p.Host
}

// Choice is what the user chose of the servers (Options): Servers,
// ServerURL, where it comes from (ServerURLFrom) and ServerLog.
type Choice struct {
	Servers                             []Spec
	ServerURL, ServerURLFrom, ServerLog string
}

// Specs are the servers to watch, one rule for every view:
// Options.Servers; else a URL the user chose (--server-url, the
// environment, config.toml); else man's servers list (pipeline.toml's, or
// the hint's before it is read), else its server (the one the worker
// talks to); else the default URL.
func Specs(o Choice, man parse.Manifest) []Spec {
	if len(o.Servers) > 0 {
		return o.Servers
	}
	from := o.ServerURLFrom
	if from != "" && from != "default" {
		return []Spec{{URL: o.ServerURL, Log: o.ServerLog, rooted: true, From: from}}
	}
	if len(man.Servers) > 0 {
		var out []Spec
		for i, e := range man.Servers {
			log, rooted := e.Log, false
			if log == "" {
				log = parse.ServerLogFor(i, e.URL)
				if i == 0 {
					log, rooted = o.ServerLog, true
				}
			}
			out = append(out, Spec{URL: e.URL, Log: log, Router: e.Router, Metrics: e.Metrics, rooted: rooted, From: "pipeline.toml servers"})
		}
		return out
	}
	if u := man.Server; u != "" {
		return []Spec{{URL: u, Log: o.ServerLog, rooted: true, From: "pipeline.toml server"}}
	}
	if from == "" {
		from = "default"
		if o.ServerURL != parse.DefaultServerURL {
			from = "options"
		}
	}
	return []Spec{{URL: o.ServerURL, Log: o.ServerLog, rooted: true, From: from}}
}

// SetSpecs makes the server set match specs, keeping the state of a
// server already watched under the same URL, and giving a new URL the log
// of a server it drops when the path is the same and no poll has read it
// yet (its tail, its fold): a first poll probes the default URL beside a
// batch that reads the default log, and pipeline.toml then names another
// URL with that log. A new tail there was no handle of the batch's and
// was read again by itself (380 ms of a first contact's table at 50 ms).
func (sv *Set) SetSpecs(specs []Spec) {
	old := map[string]*srvWatch{}
	logs := map[string]*srvWatch{} // a log no poll has read yet: nothing of it folded
	for _, s := range sv.list {
		old[s.spec.URL] = s
		if s.tail != nil && s.tail.Offset() == 0 {
			logs[s.spec.Log] = s
		}
	}
	for _, sp := range specs { // a server kept by its URL keeps its log: one tail, one reader
		if s, ok := old[sp.URL]; ok && sameLog(s, sp, sv.root) {
			delete(logs, s.spec.Log)
		}
	}
	var next []*srvWatch
	for _, sp := range specs {
		if s, ok := old[sp.URL]; ok && sameLog(s, sp, sv.root) {
			s.spec.From = sp.From
			next = append(next, s)
			continue
		}
		s := newSrvWatch(sp, sv.root, sv.pane)
		if was, ok := logs[s.spec.Log]; ok && s.tail != nil && was.role == s.role {
			s.tail, s.parser, s.launches, s.pane = was.tail, was.parser, was.launches, was.pane
			delete(logs, s.spec.Log)
		}
		next = append(next, s)
	}
	sv.list = next
	sv.first = &sv.list[0].st
}

// SpecsAre says whether the watched servers are specs, in order.
func (sv *Set) SpecsAre(specs []Spec) bool {
	if len(specs) != len(sv.list) {
		return false
	}
	for i, sp := range specs {
		s := sv.list[i]
		if s.spec.URL != sp.URL || s.spec.Router != sp.Router || s.spec.Metrics != sp.Metrics || s.spec.From != sp.From || !sameLog(s, sp, sv.root) {
			return false
		}
	}
	return true
}

func sameLog(s *srvWatch, sp Spec, root string) bool {
	l := sp.Log
	if l != "" && !path.IsAbs(l) && !sp.rooted {
		l = path.Join(root, l)
	}
	return s.spec.Log == l
}

// Tails are the server logs a poll reads, in server order.
func (sv *Set) Tails() []*remote.Tail {
	var out []*remote.Tail
	for _, s := range sv.list {
		if s.tail != nil {
			out = append(out, s.tail)
		}
	}
	return out
}

// tailUpdate is the poll's update of t (zero with an error when not read).
func tailUpdate(res remote.PollResult, t *remote.Tail) remote.TailUpdate {
	for _, up := range res.Tails {
		if up.Path == t.Path {
			return up
		}
	}
	return remote.TailUpdate{Path: t.Path, Err: errNotRead}
}

// Read is one poll's answers of one server (and, for a router, of
// its replicas).
type Read struct {
	met    parse.ServerMetrics
	metErr error
	probe  serverProbe
	router *routerRead
}

// Probe asks every server at once, in the polls'th poll; a router's worker
// list, its metrics and its replicas go in the same batch.
func (sv *Set) Probe(ctx context.Context, polls int) []Read {
	out := make([]Read, len(sv.list))
	var wg sync.WaitGroup
	for i, s := range sv.list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.role == snapshot.RoleRouter {
				out[i].router = sv.readRouter(ctx, s, polls)
				return
			}
			if s.routerDue(polls) {
				wg.Add(1)
				go func() { defer wg.Done(); out[i].router = sv.readRouter(ctx, s, polls) }()
			}
			out[i].met, out[i].probe, out[i].metErr = sv.probeServer(ctx, s, polls)
		}()
	}
	wg.Wait()
	return out
}

// FoldReads folds this poll's probes (and a router's lists) into each
// server's state.
func (sv *Set) FoldReads(reads []Read) {
	for i, s := range sv.list {
		r := reads[i]
		if r.router != nil {
			sv.foldRouter(s, r.router)
		}
		if s.role == snapshot.RoleRouter {
			s.foldProbe(routerProbe(r.router))
		} else {
			s.foldProbe(r.probe)
		}
	}
}

// judgeEach judges one Server per server (and replica), then the host's
// total, from the reads foldReads folded; each keeps what its next
// judgement needs (the /metrics sample, the log's tallies) and records its
// state changes.
func (sv *Set) judgeEach(reads []Read, now time.Time, waiting bool) (total snapshot.Server, each []snapshot.Server) {
	for i, s := range sv.list {
		r := reads[i]
		if s.role == snapshot.RoleRouter {
			v, reps := sv.judgeRouter(s, r.router, now, waiting)
			each = append(each, v)
			each = append(each, reps...)
			continue
		}
		v := sv.serverView(s, r.met, r.metErr, now, waiting)
		each = append(each, v)
	}
	for i := range each {
		sv.noteServerEvents(&each[i], now)
	}
	if len(each) == 1 {
		return each[0], each
	}
	return hostTotal(each), each
}

// named: a server's events carry its name when the host has several.
func (sv *Set) named(name string) string {
	if len(sv.list) == 1 && sv.list[0].role != snapshot.RoleRouter {
		return ""
	}
	return name
}

// noteServerEvents records the state changes of one server or replica.
func (sv *Set) noteServerEvents(v *snapshot.Server, now time.Time) {
	s := sv.serverByURL(v.URL)
	if s == nil {
		return
	}
	sv.serverEvents(s, *v, now)
}

func (sv *Set) serverByURL(u string) *srvWatch {
	for _, s := range sv.list {
		if s.spec.URL == u {
			return s
		}
		if s.rt != nil {
			if r, ok := s.rt.replicas[u]; ok {
				return r
			}
		}
	}
	return nil
}

// hostTotal is the host's servers as one: figures added up (usage: the
// fullest), state the common one, or unhealthy with the ones that are not
// answering named when some answer and some do not. A router counts
// through its replicas, not twice.
func hostTotal(each []snapshot.Server) snapshot.Server {
	t := snapshot.Server{Role: "total", Metrics: "", LogAgeSeconds: nil}
	var answering, failing []string
	states := map[snapshot.ServerState]bool{}
	var hits []float64
	for _, v := range each {
		if v.Role == snapshot.RoleRouter {
			continue
		}
		states[v.State] = true
		switch v.State {
		case snapshot.ServerReady, snapshot.ServerBusy:
			answering = append(answering, v.Name)
		case snapshot.ServerUnknown:
		default:
			failing = append(failing, v.Name+" "+string(v.State))
		}
		addServer(&t, v)
		if v.CacheHitRate != nil {
			hits = append(hits, *v.CacheHitRate)
		}
	}
	if len(each) > 0 {
		t.URLFrom = each[0].URLFrom // one rule chose them all
	}
	if len(hits) > 0 {
		var sum float64
		for _, h := range hits {
			sum += h
		}
		h := sum / float64(len(hits))
		t.CacheHitRate = &h
	}
	t.State = totalState(states, len(answering), len(failing), t.RunningReqs+t.QueueReqs > 0)
	n := len(answering) + len(failing)
	if len(failing) > 0 {
		t.Reason = itoa(len(failing)) + " of " + itoa(n) + " not answering: " + strings.Join(failing, ", ")
	}
	return t
}

// addServer adds one server's figures to the host's total t: counts
// summed, usage the fullest, the newest crash.
func addServer(t *snapshot.Server, v snapshot.Server) {
	t.GenThroughput += v.GenThroughput
	t.RunningReqs += v.RunningReqs
	t.QueueReqs += v.QueueReqs
	t.Retractions += v.Retractions
	t.TokenUsage = max(t.TokenUsage, v.TokenUsage)
	if v.Source != "" && (t.Source == "" || v.Source == "metrics") {
		t.Source = v.Source
	}
	if t.Dialect == "" {
		t.Dialect = v.Dialect
	}
	if v.LastCrashAt != nil && (t.LastCrashAt == nil || v.LastCrashAt.After(*t.LastCrashAt)) {
		t.LastCrash, t.LastCrashAt = v.Name+": "+v.LastCrash, v.LastCrashAt
	}
	t.WorkerWaiting = t.WorkerWaiting || v.WorkerWaiting
}

// totalState is the host's state from its servers' (states, and how many
// answer and fail): their common one, unhealthy when some answer and some
// do not, ready (busy with load) when only some are unknown, down when
// only failing ones are known.
func totalState(states map[snapshot.ServerState]bool, answering, failing int, load bool) snapshot.ServerState {
	switch {
	case len(states) == 1:
		for st := range states {
			if st == snapshot.ServerReady && load {
				return snapshot.ServerBusy
			}
			return st
		}
	case answering > 0 && failing > 0:
		return snapshot.ServerUnhealthy
	case answering > 0 && load:
		return snapshot.ServerBusy
	case answering > 0:
		return snapshot.ServerReady
	case failing > 0:
		return snapshot.ServerDown
	}
	return snapshot.ServerUnknown
}

// foldServerTail notes whether a server's log exists and grew.
func (sv *Set) foldServerTail(s *srvWatch, res remote.PollResult, now time.Time, polls int) {
	if s.tail == nil {
		return
	}
	sl := tailUpdate(res, s.tail)
	st := &s.st
	st.logMtime = sl.ModTime
	st.logSeen = sl.Err == nil && !sl.ModTime.IsZero()
	st.logGrew = polls > 1 && len(sl.Lines) > 0
	switch {
	case st.logGrew:
		st.logGrewAt = now
	case st.logGrewAt.IsZero() || sl.ModTime.After(st.logGrewAt) && polls <= 1:
		st.logGrewAt = sl.ModTime // the host's clock: a first read is not fresh activity
	}
}

// foldServerLines folds a server log's new lines: the display ring (each
// line tagged with its server when the host has several) and the events.
// A router's log is Rust tracing output, read by its own parser.
func (sv *Set) foldServerLines(s *srvWatch, res remote.PollResult, now time.Time, flush bool, polls int) {
	if s.tail == nil {
		return
	}
	sl := tailUpdate(res, s.tail)
	tag := ""
	if len(sv.list) > 1 {
		tag = s.name + " │ "
	}
	emit := func(ev parse.ServerEvent) { sv.foldServerEvent(s, ev, now) }
	sv.foldStarts(s, sl.Starts, now)
	s.pane.Add(sv.lines, sl, tag)
	for _, l := range sl.Lines {
		if s.role == snapshot.RoleRouter {
			if rl, ok := parse.ParseRouterLine(l.Text); ok {
				sv.foldRouterLine(s, rl)
			}
			continue
		}
		s.parser.Feed(l.Text, emit)
	}
	if flush && (len(sl.Lines) == 0 || polls <= 1) && s.role != snapshot.RoleRouter {
		// the log went quiet, or this is its first read (history: what it
		// ends with has been there since before we looked): a crash at its
		// end is complete
		s.parser.Flush(emit)
	}
}

// foldRouterLine takes the router's lifecycle and its health-check news.
func (sv *Set) foldRouterLine(s *srvWatch, l parse.RouterLine) {
	msg := parse.SanitizeLine([]byte(l.Msg), 300)
	switch l.Kind {
	case parse.RStarting:
		s.st.phase = "startup"
	case parse.RReady:
		s.st.phase, s.st.ready = "ready", true
	case parse.RWorkerDown:
		sv.tl.LogEvent(l.Time, "replica_unhealthy", "router: "+msg+workerNote(l), l.Msg)
		s.routerSays(l.Worker, msg)
	case parse.RCircuitOpen:
		if l.Worker == "" { // the breaker's line names no worker unless a field does
			sv.tl.LogEvent(l.Time, "router_error", "router: "+msg, l.Msg)
			return
		}
		sv.tl.LogEvent(l.Time, "replica_unhealthy", "router: "+msg+workerNote(l), l.Msg)
		s.routerSays(l.Worker, msg)
	case parse.RRetry:
		sv.tl.LogEvent(l.Time, "router_retry", "router: "+msg, l.Msg)
	case parse.RWorkerUp:
		sv.tl.LogEvent(l.Time, "replica_healthy", "router: "+msg, l.Msg)
		s.routerSays(l.Worker, "")
	case parse.RError:
		sv.tl.LogEvent(l.Time, "router_error", "router: "+msg, l.Msg)
	}
}

// workerNote names the worker a line gives only as a field (smg's
// "Health probe failed" carries worker_url beside the message).
func workerNote(l parse.RouterLine) string {
	if l.Worker == "" || strings.Contains(l.Msg, l.Worker) {
		return ""
	}
	return " (" + parse.SanitizeString(l.Worker) + ")"
}

// routerSays keeps what the gateway's log last said of a worker: why it
// is unhealthy, or "" once it is healthy again.
func (s *srvWatch) routerSays(worker, why string) {
	if worker == "" {
		return
	}
	if s.rt == nil {
		s.rt = &routerWatch{replicas: map[string]*srvWatch{}}
	}
	if s.rt.logDown == nil {
		s.rt.logDown = map[string]string{}
	}
	u := strings.TrimSuffix(worker, "/")
	if why == "" {
		delete(s.rt.logDown, u)
		return
	}
	s.rt.logDown[u] = why
}
