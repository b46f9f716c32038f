package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Router is a stand-in for SGLang's router (sgl-router), as its source
// behaves (sgl-project/sglang):
//   - sgl-router/src/server.rs @ 00eb5eb7: GET /workers lists
//     {url, model_id, worker_type, is_healthy, load, …}, "total", "stats";
//     GET /list_workers {"urls"}; /health; /v1/chat/completions and
//     /generate go to a healthy worker; any other path, /metrics included,
//     is 404 (the fallback).
//   - sgl-router/src/metrics.rs @ 06261b2a: Prometheus on a port of its own
//     with sgl_router_worker_health{worker}, sgl_router_running_requests{worker},
//     sgl_router_worker_load{worker}, sgl_router_cb_state{worker},
//     sgl_router_processed_requests_total{worker}, sgl_router_active_workers.
//   - sgl-router/src/core/worker.rs @ 03190661: a health checker asks each
//     worker's /health every interval; "Worker {} health check failed: {}"
//     when a healthy one fails, "Worker {} is now healthy" when it is back.
//
// Round robin stands in for the cache-aware policy: which worker gets a
// request does not matter to the dashboard.
type Router struct {
	urls     []string
	interval time.Duration
	log      io.Writer
	client   *http.Client

	mu        sync.Mutex
	healthy   map[string]bool
	load      map[string]int
	processed map[string]int
	next      int
	srv, msrv *http.Server
	prio      *admission // priority admission (routerprio.go), nil: none
	addr      string
	maddr     string
	stop      chan struct{}
}

// NewRouter routes to the worker URLs, checking their health every
// interval (the router's default is 30 s); log receives its log lines.
func NewRouter(urls []string, interval time.Duration, log io.Writer) *Router {
	if log == nil {
		log = io.Discard
	}
	r := &Router{urls: urls, interval: interval, log: log, client: &http.Client{Timeout: 5 * time.Second},
		healthy: map[string]bool{}, load: map[string]int{}, processed: map[string]int{}, stop: make(chan struct{})}
	for _, u := range urls {
		r.healthy[u] = true // BasicWorker::new starts healthy
	}
	return r
}

// Start listens on addr (the router) and metricsAddr (its Prometheus
// listener).
func (r *Router) Start(addr, metricsAddr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("router listen: %w", err)
	}
	mln, err := net.Listen("tcp", metricsAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("router metrics listen: %w", err)
	}
	r.addr, r.maddr = ln.Addr().String(), mln.Addr().String()
	r.logf("INFO", "sglang_router_rs::server", "src/server.rs:556", "Starting router on %s | mode: Regular { worker_urls: %s } | policy: RoundRobin | max_payload: 256MB", r.addr, quoteList(r.urls))
	r.check()
	n := 0
	for _, u := range r.urls {
		if r.healthy[u] {
			n++
		}
	}
	r.logf("INFO", "sglang_router_rs::server", "src/server.rs:590", "Workers initialized: %d total, %d healthy", len(r.urls), n)
	m := http.NewServeMux()
	m.HandleFunc("GET /workers", r.workers)
	m.HandleFunc("GET /list_workers", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"urls": r.urls})
	})
	m.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	m.HandleFunc("POST /v1/chat/completions", r.forward)
	m.HandleFunc("POST /generate", r.forward)
	r.srv = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	mm := http.NewServeMux()
	mm.HandleFunc("/metrics", r.metrics)
	r.msrv = &http.Server{Handler: mm, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	go func() { _ = r.msrv.Serve(mln) }()
	go r.checker()
	r.logf("INFO", "sglang_router_rs::server", "src/server.rs:720", "Router ready | workers: %s", quoteList(r.urls))
	r.logf("INFO", "sglang_router_rs::server", "src/server.rs:739", "Starting server on %s", r.addr)
	return nil
}

// URL is the router's address, the one URL the worker is given.
func (r *Router) URL() string { return "http://" + r.addr }

// MetricsURL is its Prometheus listener.
func (r *Router) MetricsURL() string { return "http://" + r.maddr }

// Close stops it.
func (r *Router) Close() {
	close(r.stop)
	if r.srv != nil {
		_ = r.srv.Close()
		_ = r.msrv.Close()
	}
}

// CheckNow runs one round of health checks, as the checker's next tick would.
func (r *Router) CheckNow() { r.check() }

func (r *Router) checker() {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.check()
		}
	}
}

func (r *Router) check() {
	var wg sync.WaitGroup
	for _, u := range r.urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := r.client.Get(u + "/health")
			ok := err == nil && resp.StatusCode == http.StatusOK
			if resp != nil {
				resp.Body.Close()
			}
			r.mu.Lock()
			was := r.healthy[u]
			r.healthy[u] = ok
			r.mu.Unlock()
			switch {
			case !ok && was:
				why := "Health check failed with status " + status(resp)
				if err != nil {
					why = "Health check request failed: " + err.Error()
				}
				r.logf("WARN", "sglang_router_rs::core::worker", "src/core/worker.rs:301", "Worker %s health check failed: %s", u, why)
			case ok && !was:
				r.logf("INFO", "sglang_router_rs::core::worker", "src/core/worker.rs:297", "Worker %s is now healthy", u)
			}
		}()
	}
	wg.Wait()
}

func status(resp *http.Response) string {
	if resp == nil {
		return ""
	}
	return fmt.Sprint(resp.StatusCode)
}

func (r *Router) workers(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var list []map[string]any
	for _, u := range r.urls {
		list = append(list, map[string]any{"url": u, "model_id": "/shared/kimi-k2.5-int4", "worker_type": "regular",
			"is_healthy": r.healthy[u], "load": r.load[u], "connection_mode": "Http", "priority": 50, "cost": 1.0})
	}
	writeJSON(w, http.StatusOK, map[string]any{"workers": list, "total": len(list),
		"stats": map[string]any{"prefill_count": 0, "decode_count": 0, "regular_count": len(list)}})
}

func (r *Router) metrics(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	active := 0
	urls := append([]string(nil), r.urls...)
	sort.Strings(urls)
	for _, u := range urls {
		if r.healthy[u] {
			active++
		}
	}
	fmt.Fprintf(&b, "# TYPE sgl_router_active_workers gauge\nsgl_router_active_workers %d\n", active)
	series := []struct {
		name, typ string
		v         func(string) float64
	}{
		{"sgl_router_worker_health", "gauge", func(u string) float64 { return b2f(r.healthy[u]) }},
		{"sgl_router_worker_load", "gauge", func(u string) float64 { return float64(r.load[u]) }},
		{"sgl_router_running_requests", "gauge", func(u string) float64 { return float64(r.load[u]) }},
		{"sgl_router_cb_state", "gauge", func(u string) float64 { return 1 - b2f(r.healthy[u]) }},
		{"sgl_router_processed_requests_total", "counter", func(u string) float64 { return float64(r.processed[u]) }},
	}
	for _, s := range series {
		fmt.Fprintf(&b, "# TYPE %s %s\n", s.name, s.typ)
		for _, u := range urls {
			fmt.Fprintf(&b, "%s{worker=%q} %g\n", s.name, u, s.v(u))
		}
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = io.WriteString(w, b.String())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// forward sends the request to the next healthy worker; none: 503. With
// priority admission (EnablePriority) it first takes a slot for its class,
// and answers 503 + X-SMG-Preempted when a higher class takes the slot
// back before the first byte of the answer.
func (r *Router) forward(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context()
	var f *flight
	if r.prio != nil {
		var err error
		if f, err = r.prio.admit(ctx, parseClass(req.Header.Get(priorityHeader))); err != nil {
			return // the client went away while queued
		}
		defer r.prio.release(f)
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-f.preempt:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	r.mu.Lock()
	target := ""
	for i := range r.urls {
		u := r.urls[(r.next+i)%len(r.urls)]
		if r.healthy[u] {
			target, r.next = u, (r.next+i+1)%len(r.urls)
			break
		}
	}
	if target != "" {
		r.load[target]++
	}
	r.mu.Unlock()
	if target == "" {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "No available workers (all circuits open or unhealthy)"})
		return
	}
	defer func() {
		r.mu.Lock()
		r.load[target]--
		r.processed[target]++
		r.mu.Unlock()
	}()
	body, _ := io.ReadAll(req.Body)
	out, err := http.NewRequestWithContext(ctx, req.Method, target+req.URL.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = req.Header.Clone()
	resp, err := http.DefaultClient.Do(out)
	if err != nil {
		if !r.prio.started(f) {
			writePreempted(w)
			return
		}
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	// the first byte of the answer is its first token (TTFT): until then
	// a higher class may take the slot back
	first := make([]byte, 32<<10)
	n, rerr := resp.Body.Read(first)
	if !r.prio.started(f) {
		writePreempted(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(first[:n])
	if rerr == nil {
		_, _ = io.Copy(flushWriter{w}, resp.Body)
	}
}

// flushWriter flushes every write: the router streams as it gets.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// logf writes one line as tracing-subscriber's fmt layer does without
// colour: UTC time, the level in five columns, target, file:line, message.
func (r *Router) logf(level, target, file, format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.log, "%s %5s %s: %s: %s\n", time.Now().UTC().Format("2006-01-02 15:04:05"), level, target, file, fmt.Sprintf(format, a...))
}

func quoteList(us []string) string {
	q := make([]string, len(us))
	for i, u := range us {
		q[i] = fmt.Sprintf("%q", u)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
