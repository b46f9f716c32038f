package pipeline

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/servers"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// metricsServer serves whatever text holds at /metrics (a status code
// other than 200 when code is set), on loopback.
type metricsServer struct {
	mu   sync.Mutex
	text string
	code int
	ts   *httptest.Server
}

func newMetricsServer(t *testing.T, text string) *metricsServer {
	m := &metricsServer{text: text}
	m.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.code != 0 {
			w.WriteHeader(m.code)
			return
		}
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, m.text)
	}))
	t.Cleanup(m.ts.Close)
	return m
}

func (m *metricsServer) set(text string, code int) {
	m.mu.Lock()
	m.text, m.code = text, code
	m.mu.Unlock()
}

// sglangTTFT is an SGLang exposition with a TTFT histogram (SGLang's
// default buckets, metrics_collector.py) holding counts per bucket.
func sglangTTFT(running int, per map[float64]int) string {
	bounds := []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10}
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} %d\n", running)
	b.WriteString("# TYPE sglang:time_to_first_token_seconds histogram\n")
	cum, sum := 0, 0.0
	for _, le := range bounds {
		cum += per[le]
		sum += float64(per[le]) * le
		fmt.Fprintf(&b, "sglang:time_to_first_token_seconds_bucket{le=\"%g\",model_name=\"m\"} %d\n", le, cum)
	}
	fmt.Fprintf(&b, "sglang:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} %d\n", cum)
	fmt.Fprintf(&b, "sglang:time_to_first_token_seconds_sum{model_name=\"m\"} %g\nsglang:time_to_first_token_seconds_count{model_name=\"m\"} %d\n", sum, cum)
	return b.String()
}

// The percentiles come from what the histograms gained between polls,
// not from the server's lifetime; a restart between two polls (buckets
// lower than before) counts what the new process observed; the window
// forgets what is older than 5 minutes. A one-shot read says its figures
// are the lifetime's.
func TestLatencyWindowFromBucketDeltas(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "prepared"))
	// hours of slow first tokens before we looked: 1,000 in (1,2]
	ms := newMetricsServer(t, sglangTTFT(8, map[float64]int{2: 1000}))
	w := localWatcher(t, root, c, Options{ServerURL: ms.ts.URL})
	l := poll(w).Server.Latency
	if l == nil || l.Scope != "lifetime" || l.TTFT == nil || l.TTFT.Count != 1000 || l.TTFT.P50 <= 1 || l.TTFT.P50 > 2 {
		t.Fatalf("first read: %+v", l)
	}
	// 100 fast ones since: the window is those
	c.advance(2 * time.Second)
	ms.set(sglangTTFT(8, map[float64]int{2: 1000, 0.4: 100}), 0)
	l = poll(w).Server.Latency
	if l == nil || l.Scope != "window" || l.TTFT == nil || l.TTFT.Count != 100 || l.TTFT.P50 <= 0.2 || l.TTFT.P99 > 0.4 || l.AgeSeconds != 0 {
		t.Fatalf("window: %+v ttft %+v", l, l.TTFT)
	}
	// the server restarted: 10 requests in (0.4,0.6] since
	c.advance(2 * time.Second)
	ms.set(sglangTTFT(8, map[float64]int{0.6: 10}), 0)
	l = poll(w).Server.Latency
	if l.TTFT.Count != 110 || l.TTFT.P50 > 0.4 || l.TTFT.P99 <= 0.4 || l.TTFT.P99 > 0.6 {
		t.Fatalf("after a restart: %+v", l.TTFT)
	}
	// /metrics fails: the window stands, aged
	c.advance(2 * time.Second)
	ms.set("", http.StatusServiceUnavailable)
	l = poll(w).Server.Latency
	if l == nil || l.TTFT.Count != 110 || l.AgeSeconds != 2 {
		t.Fatalf("a failed read: %+v", l)
	}
	// six minutes on, nothing finished: nothing in the window
	c.advance(6 * time.Minute)
	ms.set(sglangTTFT(8, map[float64]int{0.6: 10}), 0)
	if l = poll(w).Server.Latency; l != nil {
		t.Fatalf("an old window is still shown: %+v", l)
	}
}

// One row per DP rank from a 2026 SGLang's per-scheduler series (counted
// once), the slow rank named; when /metrics stops answering the rows are
// shown STALE with their age, and DOWN when the server is.
func TestReplicaRowsDPRanks(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../parse/testdata/metrics_sglang_2026_dp2_allsched_priority.prom")
	must(t, err)
	c := newClock()
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "prepared"))
	ms := newMetricsServer(t, string(raw))
	w := localWatcher(t, root, c, Options{ServerURL: ms.ts.URL})
	sv := poll(w).Server
	if sv.RunningReqs != 64 || sv.QueueReqs != 5 || len(sv.Rows) != 2 {
		t.Fatalf("server %+v rows %+v", sv, sv.Rows)
	}
	r0, r1 := sv.Rows[0], sv.Rows[1]
	if !strings.HasSuffix(r0.Name, " dp0") || r0.RunningReqs != 40 || *r0.GenThroughput != 1500 || r0.State != snapshot.RowUp || r0.Source != "metrics" ||
		!strings.HasSuffix(r1.Name, " dp1") || r1.RunningReqs != 24 || *r1.GenThroughput != 400 || *r1.TokenUsage != 0.31 {
		t.Fatalf("rows %+v %+v", r0, r1)
	}
	if sv.Imbalance == nil || sv.Imbalance.Replica != r1.Name || !r1.Slow || r0.Slow || !strings.Contains(sv.Imbalance.Reason, "1500") {
		t.Fatalf("imbalance %+v", sv.Imbalance)
	}
	if sv.Spec == nil || *sv.Spec.AcceptLength != 3.0 || sv.Latency == nil || sv.Latency.Queue.Count != 100 {
		t.Fatalf("spec %+v latency %+v", sv.Spec, sv.Latency)
	}
	c.advance(4 * time.Second)
	ms.set("", http.StatusInternalServerError)
	sv = poll(w).Server
	if len(sv.Rows) != 2 || sv.Rows[0].State != snapshot.RowStale || sv.Rows[0].AgeSeconds == nil || *sv.Rows[0].AgeSeconds != 4 || sv.Imbalance != nil {
		t.Fatalf("after a failed read: state %s rows %+v imbalance %+v", sv.State, sv.Rows, sv.Imbalance)
	}
	ms.ts.Close()
	c.advance(3 * time.Minute)
	s := pollUntil(t, w, "server down", 10*time.Second, func(s snapshot.Snapshot) bool { return s.Server.State == snapshot.ServerDown })
	if r := s.Server.Rows; len(r) != 2 || r[0].State != snapshot.RowDown || r[1].State != snapshot.RowDown || r[0].GenThroughput != nil || r[1].Name != sv.Rows[1].Name {
		t.Fatalf("rows of a server down: %+v", r)
	}
}

// Engines behind the gateway that the host cannot reach are rows from the
// gateway's smg_engine_* re-export (smg model_gateway/src/observability/
// metrics.rs), the fast and the slow one told apart.
func TestReplicaRowsFromGateway(t *testing.T) {
	t.Parallel()
	a, b := closedURL(t), closedURL(t)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/workers": // smg's WorkerListResponse (see parse.ParseRouterWorkers)
			fmt.Fprintf(w, `{"workers":[{"url":%q,"is_healthy":true,"load":70},{"url":%q,"is_healthy":true,"load":60}],"total":2}`, a, b)
		case "/metrics":
			fmt.Fprintf(w, "# TYPE smg_worker_health gauge\nsmg_worker_health{worker=%q} 1\nsmg_worker_health{worker=%q} 1\n", a, b)
			fmt.Fprintf(w, "# TYPE smg_engine_running_requests gauge\nsmg_engine_running_requests{worker=%q,model=\"m\",dp_rank=\"0\"} 70\nsmg_engine_running_requests{worker=%q,model=\"m\",dp_rank=\"0\"} 60\n", a, b)
			fmt.Fprintf(w, "# TYPE smg_engine_gen_throughput gauge\nsmg_engine_gen_throughput{worker=%q,model=\"m\",dp_rank=\"0\"} 1800\nsmg_engine_gen_throughput{worker=%q,model=\"m\",dp_rank=\"0\"} 300\n", a, b)
			fmt.Fprintf(w, "# TYPE smg_engine_token_usage gauge\nsmg_engine_token_usage{worker=%q,model=\"m\",dp_rank=\"0\"} 0.7\nsmg_engine_token_usage{worker=%q,model=\"m\",dp_rank=\"0\"} 0.9\n", a, b)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(gw.Close)
	c := newClock()
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "prepared"))
	w := localWatcher(t, root, c, Options{Servers: []servers.Spec{{URL: gw.URL, Router: true, Metrics: gw.URL}}})
	s := pollUntil(t, w, "two gateway rows", 10*time.Second, func(s snapshot.Snapshot) bool {
		return len(s.Server.Rows) == 2 && s.Server.Rows[0].Source == "gateway" && s.Server.Rows[1].Source == "gateway"
	})
	r0, r1 := s.Server.Rows[0], s.Server.Rows[1]
	if r0.Name != strings.TrimPrefix(a, "http://") || *r0.GenThroughput != 1800 || r0.RunningReqs != 70 || *r1.TokenUsage != 0.9 || r0.State != snapshot.RowUp {
		t.Fatalf("rows %+v %+v", r0, r1)
	}
	if s.Server.Imbalance == nil || s.Server.Imbalance.Replica != r1.Name {
		t.Fatalf("imbalance %+v", s.Server.Imbalance)
	}
}

// The whole path: requests through the SGLang stand-in between two polls
// show as the window's percentiles, one TTFT and one e2e each.
func TestLatencyFromSim(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "prepared"))
	srv := simOn(t, filepath.Join(root, "logs", "sglang.log"))
	w := NewWatcher(localHost(), Options{Host: "local", Root: root, ServerURL: srv.URL(), ServerLog: "logs/sglang.log"}, nil)
	pollUntil(t, w, "the server answering", 20*time.Second, func(s snapshot.Snapshot) bool { return s.Server.Source == "metrics" })
	// three answered requests: one sent while the server still warms up is
	// a 503 and no observation (the sim's warm-up is 60 ms at its speed)
	deadline := time.Now().Add(20 * time.Second)
	for done := 0; done < 3; {
		resp, err := http.Post(srv.URL()+"/generate", "application/json", strings.NewReader(`{"text":"hi","sampling_params":{"max_new_tokens":30}}`))
		must(t, err)
		_, err = io.Copy(io.Discard, resp.Body) // the whole answer, as a client reads it
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			done++
		} else if time.Now().After(deadline) {
			t.Fatalf("the server still answers %s", resp.Status)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	s := poll(w)
	l := s.Server.Latency
	if l == nil || l.Scope != "window" || l.TTFT == nil || l.TTFT.Count != 3 || l.E2E == nil || l.E2E.Count != 3 || l.ITL == nil || l.E2E.P50 < l.TTFT.P50 {
		t.Fatalf("latency %+v; server %+v", l, s.Server)
	}
}

// The KV cache dtype of the newest run the worker recorded, resolved when
// the server said "auto" (runs.jsonl's server_info).
func TestKVDtypeFromRuns(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B1")
	mkdir(t, dir)
	write(t, filepath.Join(dir, "prompts.jsonl"), prompts("B1", 2))
	write(t, filepath.Join(dir, "runs.jsonl"),
		`{"run":"r1","started_at":"2026-03-01T01:00:00Z","server_info":{"info":{"kv_cache_dtype":"fp8_e4m3"},"config_key":"k1"}}`+"\n"+
			`{"run":"r2","started_at":"2026-03-02T01:00:00Z","server_info":{"info":{"kv_cache_dtype":"auto","kv_cache_dtype_resolved":"bfloat16"},"config_key":"k2"}}`+"\n")
	if d := poll(localWatcher(t, root, c, Options{})).Server.KVCacheDType; d != "bfloat16" {
		t.Fatalf("kv dtype %q", d)
	}
}
