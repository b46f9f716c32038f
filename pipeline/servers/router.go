package servers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// routerWatch is what the watcher keeps of SGLang's router: the replicas
// its worker list names (each watched as a server without a log) and how
// its two doors answered.
type routerWatch struct {
	replicas map[string]*srvWatch
	order    []string // as the router lists them
	legacy   bool     // no /workers: ask /list_workers
	metFails int      // the Prometheus listener failed this many polls in a row
	metKind  string
	logDown  map[string]string // worker URL → why the gateway's log last called it unhealthy
}

// routerRead is one poll's answers of a router.
type routerRead struct {
	workers     []parse.RouterWorker
	listed      bool // the worker list answered
	workersKind string
	workersErr  string
	met         *parse.RouterMetrics
	metKind     string // "" not asked
	reps        map[string]Read
}

// detectEvery: a server without /metrics is asked /workers this often
// (polls), to find a router nobody configured.
const detectEvery = 10

// routerDue says whether s, not known as a router, is asked /workers this
// poll (the polls'th): its /metrics is missing (a router's main port has none).
func (s *srvWatch) routerDue(polls int) bool {
	return s.role == snapshot.RoleServer && s.st.probe.metrics == "no_metrics" && polls-s.detectAt >= detectEvery
}

// readRouter asks the router's worker list and its Prometheus listener,
// and the replicas it listed last poll their own /metrics, all at once. A
// server being tried as a router is asked its list only.
func (sv *Set) readRouter(ctx context.Context, s *srvWatch, polls int) *routerRead {
	rr := &routerRead{reps: map[string]Read{}}
	if s.rt == nil {
		s.rt = &routerWatch{replicas: map[string]*srvWatch{}}
	}
	rt := s.rt
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		rr.workers, rr.workersKind, rr.workersErr = sv.routerList(ctx, s)
		rr.listed = rr.workersKind == "ok"
	}()
	if s.role != snapshot.RoleRouter {
		s.detectAt = polls
		wg.Wait()
		return rr
	}
	if rt.metFails < 3 || polls%detectEvery == 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, kind := sv.routerMetrics(ctx, s)
			rr.met, rr.metKind = m, kind
		}()
	}
	for _, u := range rt.order {
		rep := rt.replicas[u]
		wg.Add(1)
		go func() {
			defer wg.Done()
			met, pr, err := sv.probeServer(ctx, rep, polls)
			mu.Lock()
			rr.reps[u] = Read{met: met, probe: pr, metErr: err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return rr
}

// routerList reads GET /workers, or /list_workers on a router without it.
func (sv *Set) routerList(ctx context.Context, s *srvWatch) ([]parse.RouterWorker, string, string) {
	paths := []string{"/workers", "/list_workers"}
	if s.rt.legacy {
		paths = paths[1:]
	}
	var lastErr error
	for _, p := range paths {
		body, err := sv.web.body(ctx, s.spec.URL, p, 4<<20)
		if err == nil {
			ws, perr := parse.ParseRouterWorkers(body)
			if perr != nil {
				return nil, "no_router", perr.Error()
			}
			s.rt.legacy = p == "/list_workers"
			return ws, "ok", ""
		}
		lastErr = err
		if probeKind(err) != "no_metrics" { // only a 404 says: try the older route
			break
		}
	}
	kind := probeKind(lastErr)
	if kind == "no_metrics" {
		kind = "http 404"
	}
	return nil, kind, lastErr.Error()
}

// routerMetricsURL is where the router's Prometheus listener is.
func routerMetricsURL(sp Spec) string {
	if sp.Metrics != "" {
		return sp.Metrics
	}
	u, err := url.Parse(sp.URL)
	if err != nil {
		return ""
	}
	return "http://" + net.JoinHostPort(u.Hostname(), parse.RouterDefaultMetricsPort)
}

func (sv *Set) routerMetrics(ctx context.Context, s *srvWatch) (*parse.RouterMetrics, string) {
	base := routerMetricsURL(s.spec)
	if base == "" {
		return nil, "error"
	}
	body, err := sv.web.body(ctx, base, "/metrics", 8<<20)
	if err != nil {
		return nil, probeKind(err)
	}
	m, err := parse.ParseRouterMetrics(bytes.NewReader(body))
	if err != nil {
		return nil, "no_metrics"
	}
	return &m, "ok"
}

// routerProbe is a router's probe, as the state table reads it: the
// worker list stands for /metrics (its main port has none).
func routerProbe(rr *routerRead) serverProbe {
	if rr == nil {
		return serverProbe{}
	}
	return serverProbe{metrics: rr.workersKind, err: rr.workersErr}
}

// foldRouter takes a router's answers: a server found to answer /workers
// becomes a router; the replicas follow the list.
func (sv *Set) foldRouter(s *srvWatch, rr *routerRead) {
	rt := s.rt
	if s.role != snapshot.RoleRouter {
		if rr.listed {
			s.becomeRouter()
			sv.tl.Note(sv.now(), "router_found", "", fmt.Sprintf("%s is SGLang's router: %d replicas behind it", s.name, len(rr.workers)))
		}
		return
	}
	if rr.metKind != "" {
		if rr.metKind == "ok" {
			rt.metFails = 0
		} else {
			rt.metFails++
		}
		rt.metKind = rr.metKind
	}
	for u, r := range rr.reps {
		if rep, ok := rt.replicas[u]; ok {
			rep.foldProbe(r.probe)
		}
	}
	if !rr.listed {
		return // the last list stands until the router answers again
	}
	seen := map[string]bool{}
	rt.order = rt.order[:0]
	for _, wk := range rr.workers {
		if seen[wk.URL] {
			continue
		}
		seen[wk.URL] = true
		rt.order = append(rt.order, wk.URL)
		if _, ok := rt.replicas[wk.URL]; !ok {
			rep := newSrvWatch(Spec{URL: wk.URL}, sv.root, sv.pane)
			rep.role = snapshot.RoleReplica
			rt.replicas[wk.URL] = rep
		}
	}
	for u := range rt.replicas {
		if !seen[u] {
			delete(rt.replicas, u)
			sv.tl.Note(sv.now(), "replica_removed", "", "replica "+shortURL(u)+" left the router's worker list")
		}
	}
}

// judgeRouter judges the router's line and one per replica. A replica's state
// is its own /metrics, read through the host, checked against the
// router's health checks (its list, else its metrics); a replica the host
// cannot reach itself is judged by the router alone, and says so.
func (sv *Set) judgeRouter(s *srvWatch, rr *routerRead, now time.Time, waiting bool) (snapshot.Server, []snapshot.Server) {
	rt := s.rt
	byURL := map[string]parse.RouterWorker{}
	if rr != nil {
		for _, wk := range rr.workers {
			byURL[wk.URL] = wk
		}
	}
	var reps []snapshot.Server
	healthy, load := 0, 0
	for _, u := range rt.order {
		v := sv.judgeRouted(s, u, byURL, rr, now, waiting)
		if h := v.RouterHealthy; h != nil && *h {
			healthy++
		}
		if l := v.RouterLoad; l != nil {
			load += *l
		}
		reps = append(reps, v)
	}
	v := snapshot.Server{Role: snapshot.RoleRouter, URL: s.spec.URL, URLFrom: s.spec.From, Name: s.name, Retractions: 0, Replicas: len(rt.order), HealthyReplicas: healthy}
	f := serverFacts{metrics: s.st.probe.metrics, phase: s.st.phase, logSeen: s.st.logSeen, logGrew: s.st.logGrew,
		waiting: waiting, load: load, refused: s.st.refused}
	if s.st.logSeen && !s.st.logGrewAt.IsZero() {
		f.logAge = max(now.Sub(s.st.logGrewAt), 0)
		age := f.logAge.Seconds()
		v.LogAgeSeconds = &age
	}
	v.State, v.Reason = serverStateFor(f)
	v.Metrics = rt.metKind
	if rr != nil && rr.listed {
		v.Source, v.RunningReqs = "router", load
		if len(rt.order) > 0 && healthy == 0 && anyKnown(reps) {
			v.State, v.Reason = snapshot.ServerUnhealthy, "no healthy worker: the router can route nowhere"
		}
	}
	return v, reps
}

// judgeRouted judges the replica at u: its own answer through the host,
// weighed against what the router says of it.
func (sv *Set) judgeRouted(s *srvWatch, u string, byURL map[string]parse.RouterWorker, rr *routerRead, now time.Time, waiting bool) snapshot.Server {
	rt := s.rt
	r, asked := Read{}, false
	if rr != nil {
		r, asked = rr.reps[u]
	}
	if !asked {
		r = Read{metErr: errNotRead}
	}
	v := sv.serverView(rt.replicas[u], r.met, r.metErr, now, waiting)
	v.Via = s.spec.URL
	h, l := routerWord(u, byURL, rr)
	h, why := rt.gatewayHealth(u, byURL, rr, h)
	v.RouterHealthy, v.RouterLoad = h, l
	if why != "" {
		v.Reason = join(v.Reason, why)
	}
	judgeReplica(&v, asked)
	return v
}

// routerWord is what the router says of the replica at u: its health
// verdict and its running requests, from its list, else its metrics.
func routerWord(u string, byURL map[string]parse.RouterWorker, rr *routerRead) (h *bool, l *int) {
	wk, listed := byURL[u]
	var m parse.RouterWorkerMetrics
	var measured bool
	if rr != nil && rr.met != nil {
		m, measured = rr.met.Workers[u]
	}
	if listed && wk.Healthy.OK {
		h = &wk.Healthy.V
	} else if measured && m.Healthy.OK {
		h = &m.Healthy.V
	}
	if listed && wk.Load.OK {
		l = &wk.Load.V
	} else if measured && m.Running.OK {
		n := int(m.Running.V)
		l = &n
	}
	return h, l
}

// gatewayHealth adds to the gateway's health verdict of a worker (its
// list, else its smg_worker_health) what else the gateway says: an open
// circuit breaker (smg_worker_cb_state 1: it routes nothing there) is
// unhealthy whatever the list says; with no verdict from the list or the
// metrics, its log's last health line of the worker stands.
func (rt *routerWatch) gatewayHealth(u string, byURL map[string]parse.RouterWorker, rr *routerRead, h *bool) (*bool, string) {
	no := false
	if rr != nil && rr.met != nil {
		if m, ok := rr.met.Workers[u]; ok && m.CBState.OK && m.CBState.V == 1 {
			return &no, "the gateway's circuit breaker is open"
		}
	}
	if h == nil {
		if why, ok := rt.logDown[strings.TrimSuffix(u, "/")]; ok {
			return &no, "the gateway's log: " + why
		}
	}
	return h, ""
}

func anyKnown(reps []snapshot.Server) bool {
	for _, r := range reps {
		if r.RouterHealthy != nil {
			return true
		}
	}
	return false
}

// judgeReplica weighs the router's health check against the replica's own
// answer. asked: its /metrics was asked this poll.
func judgeReplica(v *snapshot.Server, asked bool) {
	h := v.RouterHealthy
	answering := v.State == snapshot.ServerReady || v.State == snapshot.ServerBusy
	unreachable := !asked || v.Metrics == "error" || v.State == snapshot.ServerUnknown
	switch {
	case h == nil:
	case !*h && answering:
		v.State, v.Reason = snapshot.ServerUnhealthy, join(v.Reason, "the router's health checks fail")
	case !*h && unreachable:
		v.State, v.Reason = snapshot.ServerDown, "the router's health checks fail (not read from the host itself)"
	case !*h:
		v.Reason = join(v.Reason, "the router's health checks fail")
	case unreachable:
		v.State, v.Reason, v.Source = snapshot.ServerReady, "from the router's health checks (its /metrics not read from the host)", "router"
		if v.RouterLoad != nil {
			v.RunningReqs = *v.RouterLoad
			if *v.RouterLoad > 0 {
				v.State = snapshot.ServerBusy
			}
		}
	case !answering:
		v.Reason = join(v.Reason, "the router still counts it healthy")
	}
}

var errNotRead = errors.New("not read this poll")

func itoa(n int) string { return strconv.Itoa(n) }
