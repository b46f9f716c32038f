package parse

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// SGLang's router (sgl-router, since renamed the SGLang Model Gateway) sits
// in front of several SGLang servers and is reached through one URL. Its
// main port answers /workers (and the older /list_workers) but has no
// /metrics: its Prometheus listener is a port of its own, 29000 unless
// --prometheus-port says otherwise.
//
// Sources, sgl-project/sglang:
//   - sgl-router/src/server.rs @ 00eb5eb7: routes /workers (list_workers_rest:
//     {"workers":[{url, model_id, worker_type, is_healthy, load, …}], "total", "stats"}),
//     /list_workers ({"urls": […]}), /health, /liveness, /readiness; no /metrics
//     (the fallback answers 404).
//   - sgl-model-gateway/src/protocols/worker_spec.rs @ 0cbf0687: WorkerInfo
//     {id, url, model_id, worker_type, is_healthy, load, …}, WorkerListResponse.
//   - sgl-router/src/metrics.rs @ 06261b2a: PrometheusConfig port 29000;
//     sgl_router_worker_health{worker} (1 healthy, 0 not), sgl_router_running_requests{worker},
//     sgl_router_worker_load{worker}, sgl_router_cb_state{worker} (0 closed, 1 open,
//     2 half open), sgl_router_processed_requests_total{worker}, sgl_router_active_workers.
//   - sgl-model-gateway/src/observability/metrics.rs @ 01b2d83a: the smg_* names,
//     smg_worker_health{worker}, smg_worker_requests_active{worker}, smg_worker_cb_state{worker}.

// RouterDefaultMetricsPort is the router's Prometheus port unless set
// (PrometheusConfig::default in sgl-router/src/metrics.rs).
const RouterDefaultMetricsPort = "29000"

// RouterWorker is one replica behind the router, as the router sees it.
type RouterWorker struct {
	URL     string
	Type    string    // regular | prefill | decode ("" when the list gives no detail)
	Model   string    // model_id
	Healthy Opt[bool] // the router's health checks (is_healthy)
	Load    Opt[int]  // requests the router has in flight on it
}

// ParseRouterWorkers reads the router's worker list: GET /workers (both the
// sgl-router and the model gateway shape) or the legacy GET /list_workers
// ({"urls": […]}, which says nothing of health). A body that is neither is
// an error: the URL is no SGLang router.
func ParseRouterWorkers(data []byte) ([]RouterWorker, error) {
	var doc struct {
		Workers *[]struct {
			URL       string               `json:"url"`
			Spec      struct{ URL string } `json:"spec"` // newer gateways nest the spec
			ModelID   string               `json:"model_id"`
			Type      string               `json:"worker_type"`
			IsHealthy *bool                `json:"is_healthy"`
			Load      *int                 `json:"load"`
		} `json:"workers"`
		URLs *[]string `json:"urls"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("router worker list: %w", err)
	}
	var out []RouterWorker
	switch {
	case doc.Workers != nil:
		for _, w := range *doc.Workers {
			rw := RouterWorker{URL: w.URL, Type: w.Type, Model: w.ModelID}
			if rw.URL == "" {
				rw.URL = w.Spec.URL
			}
			if w.IsHealthy != nil {
				rw.Healthy = some(*w.IsHealthy)
			}
			if w.Load != nil {
				rw.Load = some(*w.Load)
			}
			if rw.URL != "" {
				out = append(out, rw)
			}
		}
	case doc.URLs != nil:
		for _, u := range *doc.URLs {
			out = append(out, RouterWorker{URL: u})
		}
	default:
		return nil, fmt.Errorf("router worker list: neither \"workers\" nor \"urls\"")
	}
	return out, nil
}

// RouterMetrics is what the router's Prometheus listener says.
type RouterMetrics struct {
	Dialect       string // sgl_router | smg
	ActiveWorkers Opt[float64]
	Workers       map[string]RouterWorkerMetrics // by the worker label (its URL)
	Engines       map[string]EngineMetrics       // smg's smg_engine_* re-export, by worker (smgengine.go)
}

// RouterWorkerMetrics are the router's per-worker series.
type RouterWorkerMetrics struct {
	Healthy  Opt[bool]
	Running  Opt[float64] // requests in flight on it
	CBState  Opt[float64] // circuit breaker: 0 closed, 1 open, 2 half open
	Requests Opt[float64] // counter: requests it processed
}

// routerSeries maps the per-worker series of both dialects to one field.
var routerSeries = map[string]string{
	"sgl_router_worker_health":            "health",
	"smg_worker_health":                   "health",
	"sgl_router_running_requests":         "running",
	"smg_worker_requests_active":          "running",
	"sgl_router_cb_state":                 "cb",
	"smg_worker_cb_state":                 "cb",
	"sgl_router_processed_requests_total": "processed",
}

// ParseRouterMetrics reads the router's /metrics. No router series at all
// is an error: whoever answered is not the router's listener.
func ParseRouterMetrics(r io.Reader) (RouterMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return RouterMetrics{}, fmt.Errorf("parse router metrics: %w", err)
	}
	m := RouterMetrics{Workers: map[string]RouterWorkerMetrics{}, Engines: map[string]EngineMetrics{}}
	for name, fam := range fams {
		switch {
		case strings.HasPrefix(name, "sgl_router_"):
			m.Dialect = "sgl_router"
		case strings.HasPrefix(name, "smg_") && m.Dialect == "":
			m.Dialect = "smg"
		}
		if name == "sgl_router_active_workers" {
			for _, mt := range fam.GetMetric() {
				if v, ok := value(fam.GetType(), mt); ok {
					m.ActiveWorkers = some(v)
				}
			}
		}
		if foldEngine(m.Engines, name, fam) {
			continue
		}
		field, ok := routerSeries[name]
		if !ok {
			continue
		}
		for _, mt := range fam.GetMetric() {
			v, ok := value(fam.GetType(), mt)
			url := labelOf(mt.GetLabel(), "worker")
			if !ok || url == "" || v < 0 && (field == "health" || field == "cb") {
				continue // -1: the gateway's sentinel for a removed worker (metrics.rs @ f8daa883 remove_worker_metrics)
			}
			wm := m.Workers[url]
			switch field {
			case "health":
				wm.Healthy = some(v >= 1)
			case "running":
				wm.Running = some(v)
			case "cb":
				wm.CBState = some(v)
			case "processed":
				wm.Requests = some(v)
			}
			m.Workers[url] = wm
		}
	}
	if m.Dialect == "" {
		return m, fmt.Errorf("parse router metrics: no sgl_router_* or smg_* series")
	}
	return m, nil
}

func labelOf[L interface {
	GetName() string
	GetValue() string
}](ls []L, name string) string {
	for _, l := range ls {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
