package servers

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// figureState is what the watcher keeps for the server TUIs' figures:
// each server's latency window, its last fresh rows, and vLLM engines'
// last generation counters.
type figureState struct {
	lat  map[string]*latWindow
	rows map[string]rowMemo
	gen  map[string]genSample // by server URL + rank
}

type rowMemo struct {
	rows []snapshot.ReplicaRow
	at   time.Time
}

type genSample struct {
	v  float64
	at time.Time
}

// replicaRead is what this poll read of the replica at u behind a router:
// its own /metrics through the host (errNotRead when not asked), and the
// gateway's re-export of its engine's figures (nil: none).
func replicaRead(rr *routerRead, u string) (Read, *parse.EngineMetrics) {
	rd := Read{metErr: errNotRead}
	if rr == nil {
		return rd, nil
	}
	if x, ok := rr.reps[u]; ok {
		rd = x
	}
	if rr.met != nil {
		if e, ok := rr.met.Engines[u]; ok {
			return rd, &e
		}
	}
	return rd, nil
}

// Figures sets the host's latency percentiles, speculative acceptance,
// KV cache dtype, replica rows and imbalance (on the host's server, as
// judge left it) from this poll's reads; each figure is set in this one
// place for every view. runDtype: the KV cache dtype the newest run
// recorded (counts.runKVDtype), for servers whose /metrics says none.
func (sv *Set) Figures(reads []Read, now time.Time, runDtype string) {
	fs, each := &sv.figs, sv.each
	if fs.lat == nil {
		fs.lat, fs.rows, fs.gen = map[string]*latWindow{}, map[string]rowMemo{}, map[string]genSample{}
	}
	seen := map[string]bool{}
	var wins []*latWindow
	var rows []snapshot.ReplicaRow
	dtype := ""
	one := func(name, url string, rd Read, eng *parse.EngineMetrics) {
		seen[url] = true
		lw := fs.lat[url]
		if lw == nil {
			lw = &latWindow{}
			fs.lat[url] = lw
		}
		if rd.metErr == nil {
			lw.note(rd.met, now)
			if rd.met.KVCacheDType != "" {
				dtype = rd.met.KVCacheDType
			}
		}
		lw.trim(now)
		wins = append(wins, lw)
		rows = append(rows, fs.rowsOf(name, viewOf(each, url), rd, eng, now)...)
	}
	for i, sw := range sv.list {
		if i >= len(reads) {
			break
		}
		r := reads[i]
		if sw.role != snapshot.RoleRouter {
			one(sw.name, sw.spec.URL, r, nil)
			continue
		}
		for _, u := range sw.rt.order {
			rd, eng := replicaRead(r.router, u)
			one(shortURL(u), u, rd, eng)
		}
	}
	for u := range fs.lat {
		if !seen[u] {
			delete(fs.lat, u)
			delete(fs.rows, u)
		}
	}
	host := &sv.shown
	host.Latency = latencyOf(wins, now)
	host.Spec = specOf(wins)
	if dtype == "" {
		dtype = runDtype
	}
	host.KVCacheDType = parse.SanitizeString(dtype)
	if len(rows) > 1 {
		host.Rows = rows
		if im := imbalance(rows); im != nil {
			host.Imbalance = im
			for i := range host.Rows {
				host.Rows[i].Slow = host.Rows[i].Name == im.Replica
			}
		}
	}
}

// viewOf is the Server view of url this poll.
func viewOf(each []snapshot.Server, url string) snapshot.Server {
	for _, v := range each {
		if v.URL == url {
			return v
		}
	}
	if len(each) == 1 {
		return each[0]
	}
	return snapshot.Server{State: snapshot.ServerUnknown}
}

// rowsOf is one server's rows: one per DP rank or engine when its
// /metrics has several, else one; from the gateway when the host cannot
// read it; its last rows, STALE, when nothing was read this poll.
func (fs *figureState) rowsOf(name string, v snapshot.Server, rd Read, eng *parse.EngineMetrics, now time.Time) []snapshot.ReplicaRow {
	dead := v.State == snapshot.ServerDown || v.State == snapshot.ServerCrashed
	if v.RouterHealthy != nil && !*v.RouterHealthy {
		dead = true // the gateway routes nothing to it: DOWN for the serving, whatever its own /metrics says
	}
	base := snapshot.ReplicaRow{Name: name, Server: name, State: snapshot.RowUp}
	switch {
	case dead:
		return fs.downRows(name, v, base)
	case rd.metErr == nil && len(rd.met.Ranks) > 1:
		return fs.rankRows(name, v, rd, base, now)
	case rd.metErr == nil || v.Source == "log":
		return fs.serverRow(v, base, now)
	case eng != nil:
		return []snapshot.ReplicaRow{gatewayRow(name, eng, base)}
	}
	return fs.lastRows(v, base, now)
}

// rankRows is a row per DP rank of the server's /metrics.
func (fs *figureState) rankRows(name string, v snapshot.Server, rd Read, base snapshot.ReplicaRow, now time.Time) []snapshot.ReplicaRow {
	var out []snapshot.ReplicaRow
	for _, rk := range rd.met.Ranks {
		r := base
		r.Name, r.Source = name+" "+rk.Rank, "metrics"
		r.RunningReqs, r.QueueReqs = int(rk.RunningReqs.V), int(rk.QueueReqs.V)
		r.TokenUsage = optPtr(rk.TokenUsage)
		r.GenThroughput = optPtr(rk.GenThroughput)
		if rk.GenTokens.OK {
			r.GenThroughput = fs.rate(v.URL+"|"+rk.Rank, rk.GenTokens.V, now)
		}
		out = append(out, r)
	}
	fs.rows[v.URL] = rowMemo{rows: out, at: now}
	return out
}

// serverRow is the server's one row, from its /metrics or its log (the
// log's last figures, when old, shown STALE with their age, never as live).
func (fs *figureState) serverRow(v snapshot.Server, base snapshot.ReplicaRow, now time.Time) []snapshot.ReplicaRow {
	r := base
	g, u := v.GenThroughput, v.TokenUsage
	r.Source, r.GenThroughput, r.RunningReqs, r.QueueReqs, r.TokenUsage, r.CacheHitRate = v.Source, &g, v.RunningReqs, v.QueueReqs, &u, v.CacheHitRate
	if v.Source == "log" && v.FiguresStale {
		r.State, r.AgeSeconds = snapshot.RowStale, v.FiguresAgeSeconds
		if lb := v.LastBatch; lb != nil {
			g, u := lb.GenThroughput, lb.TokenUsage
			r.GenThroughput, r.RunningReqs, r.QueueReqs, r.TokenUsage = &g, lb.RunningReqs, lb.QueueReqs, &u
		}
	}
	fs.rows[v.URL] = rowMemo{rows: []snapshot.ReplicaRow{r}, at: now}
	return []snapshot.ReplicaRow{r}
}

// gatewayRow is the server's row from the gateway's smg_engine_* re-export.
func gatewayRow(name string, eng *parse.EngineMetrics, base snapshot.ReplicaRow) snapshot.ReplicaRow {
	r := base
	r.Source, r.Reason = "gateway", "from the gateway's smg_engine_* re-export"
	r.GenThroughput, r.TokenUsage, r.CacheHitRate = optPtr(eng.GenThroughput), optPtr(eng.TokenUsage), optPtr(eng.CacheHitRate)
	r.RunningReqs, r.QueueReqs = int(eng.Running.V), int(eng.Waiting.V)
	if eng.Ranks > 1 {
		r.Name = fmt.Sprintf("%s (%d DP)", name, eng.Ranks)
	}
	return r
}

// lastRows is what nothing read this poll leaves: the last rows, STALE
// with their age; else the gateway's count of requests in flight; else a
// row of unknown state.
func (fs *figureState) lastRows(v snapshot.Server, base snapshot.ReplicaRow, now time.Time) []snapshot.ReplicaRow {
	if m, ok := fs.rows[v.URL]; ok {
		age := now.Sub(m.at).Seconds()
		out := make([]snapshot.ReplicaRow, len(m.rows))
		for i, r := range m.rows {
			r.State, r.AgeSeconds, r.Reason = snapshot.RowStale, &age, v.Reason
			out[i] = r
		}
		return out
	}
	r := base
	if v.RouterLoad != nil { // the gateway's own count (smg_worker_requests_active, or its list's load)
		r.Source, r.RunningReqs, r.Reason = "gateway", *v.RouterLoad, "requests in flight, from the gateway"
		return []snapshot.ReplicaRow{r}
	}
	r.State, r.Reason = snapshot.RowUnknown, v.Reason
	return []snapshot.ReplicaRow{r}
}

// downRows are a dead server's rows: each rank it had, DOWN, no figures.
func (fs *figureState) downRows(name string, v snapshot.Server, base snapshot.ReplicaRow) []snapshot.ReplicaRow {
	names := []string{name}
	if m, ok := fs.rows[v.URL]; ok { // each rank it had is down
		names = names[:0]
		for _, r := range m.rows {
			names = append(names, r.Name)
		}
	}
	reason := v.Reason
	if v.RouterHealthy != nil && !*v.RouterHealthy && !strings.Contains(reason, "gateway") && !strings.Contains(reason, "router") {
		reason = join(reason, "the gateway marks it unhealthy")
	}
	var out []snapshot.ReplicaRow
	for _, n := range names {
		r := base
		r.Name, r.State, r.Reason = n, snapshot.RowDown, reason
		out = append(out, r)
	}
	return out
}

// rate is a counter's per-second gain since its last read (nil on the
// first, or after a reset).
func (fs *figureState) rate(key string, v float64, now time.Time) *float64 {
	prev, ok := fs.gen[key]
	fs.gen[key] = genSample{v: v, at: now}
	dt := now.Sub(prev.at).Seconds()
	if !ok || v < prev.v || dt <= 0 {
		return nil
	}
	r := (v - prev.v) / dt
	return &r
}

func optPtr(o parse.Opt[float64]) *float64 {
	if !o.OK {
		return nil
	}
	v := o.V
	return &v
}

// imbalance names the replica that lags: among replicas read this poll,
// one generating under half the median of the others while it has work
// (slowReplica), or one idle while the others queue (idleReplica). None
// when fewer than two are up.
func imbalance(rows []snapshot.ReplicaRow) *snapshot.Imbalance {
	var up []snapshot.ReplicaRow
	for _, r := range rows {
		if r.State == snapshot.RowUp {
			up = append(up, r)
		}
	}
	if len(up) < 2 {
		return nil
	}
	if im := slowReplica(up); im != nil {
		return im
	}
	return idleReplica(up)
}

// busy says a replica has work: requests running or queued.
func busy(r snapshot.ReplicaRow) bool { return r.RunningReqs+r.QueueReqs > 0 }

// slowReplica is the busy replica generating least, when that is under
// half the median of the other busy ones.
func slowReplica(up []snapshot.ReplicaRow) *snapshot.Imbalance {
	slowest, slow := -1, math.Inf(1)
	for i, r := range up {
		if r.GenThroughput != nil && busy(r) && *r.GenThroughput < slow {
			slowest, slow = i, *r.GenThroughput
		}
	}
	if slowest < 0 {
		return nil
	}
	var others []float64
	for i, r := range up {
		if i != slowest && r.GenThroughput != nil && busy(r) {
			others = append(others, *r.GenThroughput)
		}
	}
	med := median(others)
	if len(others) == 0 || med <= 0 || !(slow < med/2) { // NaN (a log's "nan") names no one
		return nil
	}
	r := up[slowest]
	return &snapshot.Imbalance{Replica: r.Name, Reason: fmt.Sprintf("%s: %.0f tok/s with %d running, %d queued; the others' median %.0f tok/s",
		r.Name, slow, r.RunningReqs, r.QueueReqs, med)}
}

// idleReplica is the first replica with no work while others queue.
func idleReplica(up []snapshot.ReplicaRow) *snapshot.Imbalance {
	var queued []string
	for _, o := range up {
		if o.QueueReqs > 0 {
			queued = append(queued, fmt.Sprintf("%s %d", o.Name, o.QueueReqs))
		}
	}
	if len(queued) == 0 {
		return nil
	}
	for _, r := range up {
		if !busy(r) {
			return &snapshot.Imbalance{Replica: r.Name, Reason: r.Name + ": idle while others queue (" + strings.Join(queued, ", ") + ")"}
		}
	}
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
