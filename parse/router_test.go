package parse

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/router/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRouterWorkers(t *testing.T) {
	for _, c := range []struct {
		file      string
		healthKnw bool
		load0     int
	}{
		{"sgl_router_workers.json", true, 37},
		{"smg_workers.json", true, 42},
		{"list_workers.json", false, 0},
	} {
		ws, err := ParseRouterWorkers(readFixture(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if len(ws) != 2 || ws[0].URL != "http://127.0.0.1:31000" || ws[1].URL != "http://127.0.0.1:31001" {
			t.Fatalf("%s: %+v", c.file, ws)
		}
		if ws[0].Healthy.OK != c.healthKnw || ws[1].Healthy.OK != c.healthKnw {
			t.Errorf("%s: health known %v/%v, want %v", c.file, ws[0].Healthy.OK, ws[1].Healthy.OK, c.healthKnw)
		}
		if c.healthKnw && (!ws[0].Healthy.V || ws[1].Healthy.V) {
			t.Errorf("%s: health %v/%v, want true/false", c.file, ws[0].Healthy.V, ws[1].Healthy.V)
		}
		if c.healthKnw && (ws[0].Load.V != c.load0 || ws[0].Type != "regular") {
			t.Errorf("%s: load %d type %q", c.file, ws[0].Load.V, ws[0].Type)
		}
	}
	for _, bad := range []string{`{"status":"ok"}`, `not json`, `[]`} {
		if _, err := ParseRouterWorkers([]byte(bad)); err == nil {
			t.Errorf("%q: no error; an SGLang server's answer must not pass for a router's", bad)
		}
	}
}

func TestParseRouterMetrics(t *testing.T) {
	for _, c := range []struct {
		file, dialect string
		running       float64
	}{
		{"sgl_router_metrics.txt", "sgl_router", 37},
		{"smg_metrics.txt", "smg", 42},
	} {
		m, err := ParseRouterMetrics(bytes.NewReader(readFixture(t, c.file)))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		up, down := m.Workers["http://127.0.0.1:31000"], m.Workers["http://127.0.0.1:31001"]
		if m.Dialect != c.dialect || !up.Healthy.OK || !up.Healthy.V || !down.Healthy.OK || down.Healthy.V {
			t.Fatalf("%s: %+v", c.file, m)
		}
		if up.Running.V != c.running || down.CBState.V != 1 || up.CBState.V != 0 {
			t.Errorf("%s: running %v cb %v/%v", c.file, up.Running.V, up.CBState.V, down.CBState.V)
		}
	}
	// an SGLang server's /metrics is no router's
	_, err := ParseRouterMetrics(strings.NewReader("# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 3\n"))
	if err == nil {
		t.Error("sglang series taken for a router's")
	}
}

func TestParseRouterLog(t *testing.T) {
	counts := map[RouterKind]int{}
	var down, up RouterLine
	for _, f := range []string{"smg_2026.log", "sgl_router_health.log"} {
		sc := bufio.NewScanner(bytes.NewReader(readFixture(t, f)))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l, ok := ParseRouterLine(sc.Text())
			if !ok {
				t.Errorf("%s: not read: %q", f, sc.Text())
				continue
			}
			counts[l.Kind]++
			switch l.Kind {
			case RWorkerDown:
				down = l
			case RWorkerUp:
				up = l
			}
		}
	}
	want := map[RouterKind]int{RStarting: 2, RReady: 4, RWorkersInit: 2, RWorkerDown: 1, RWorkerUp: 1, RError: 1}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("kind %d: %d lines, want %d", k, counts[k], n)
		}
	}
	if down.Worker != "http://127.0.0.1:31001" || !strings.HasPrefix(down.Detail, "Health check request failed") || down.Level != "WARN" {
		t.Errorf("health failure: %+v", down)
	}
	if up.Worker != "http://127.0.0.1:31001" || up.Time.Hour() != 9 || up.Time.Minute() != 16 {
		t.Errorf("back: %+v", up)
	}
	// coloured stdout, as the router writes it to a terminal or nohup file
	l, ok := ParseRouterLine("\x1b[2m2026-02-26 13:55:38\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2msmg::server\x1b[0m\x1b[2m:\x1b[0m \x1b[2msrc/server.rs\x1b[0m\x1b[2m:\x1b[0m\x1b[2m875:\x1b[0m Workers initialized: 2 total, 1 healthy")
	if !ok || l.Kind != RWorkersInit || l.Total != 2 || l.Healthy != 1 {
		t.Errorf("coloured line: %+v %v", l, ok)
	}
	for _, s := range []string{"[2026-03-02 08:00:01] The server is fired up and ready to roll!", "Traceback (most recent call last):", ""} {
		if _, ok := ParseRouterLine(s); ok {
			t.Errorf("%q read as a router line", s)
		}
	}
}

func TestManifestServers(t *testing.T) {
	m, err := ParseManifest([]byte(`servers = ["http://127.0.0.1:30000", "http://127.0.0.1:30001"]` + "\n"))
	if err != nil || len(m.Servers) != 2 || m.Servers[1].URL != "http://127.0.0.1:30001" {
		t.Fatalf("%+v %v", m.Servers, err)
	}
	if ServerLogFor(0, m.Servers[0].URL) != ServerLogPath || ServerLogFor(1, m.Servers[1].URL) != "logs/sglang_inference.30001.log" {
		t.Errorf("default logs: %s %s", ServerLogFor(0, m.Servers[0].URL), ServerLogFor(1, m.Servers[1].URL))
	}
	m, err = ParseManifest([]byte("[[servers]]\nurl = \"http://127.0.0.1:30000\"\nrouter = true\nlog = \"logs/router.log\"\nmetrics = \"http://127.0.0.1:29000\"\n"))
	if err != nil || len(m.Servers) != 1 || !m.Servers[0].Router || m.Servers[0].Log != "logs/router.log" || m.Servers[0].Metrics == "" {
		t.Fatalf("%+v %v", m.Servers, err)
	}
	for _, bad := range []string{`servers = ["127.0.0.1:30000"]`, "[[servers]]\nurl = \"http://h:1\"\nrouterr = true\n", `servers = [3]`} {
		if _, err := ParseManifest([]byte(bad + "\n")); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The Shepherd Model Gateway's health lines (model_gateway/src/worker/worker.rs
// @ f8daa883, per shared/reference/review/server-semantics.md §1.4), in its
// text format and as --json-log writes them (tracing's JSON layer with
// flatten_event, model_gateway/src/observability/logging.rs @ 9403b030).
func TestParseSMGHealthLines(t *testing.T) {
	for _, tc := range []struct{ line, worker, detail, level string }{
		{"2026-08-22 10:00:00  WARN smg::worker::worker: model_gateway/src/worker/worker.rs:1768: HTTP health check failed for http://127.0.0.1:31001/health: reqwest::Error { kind: Request, source: ConnectError }",
			"http://127.0.0.1:31001", "reqwest::Error { kind: Request, source: ConnectError }", "WARN"},
		{"2026-08-22 10:00:01  WARN smg::worker::worker: model_gateway/src/worker/worker.rs:1693: gRPC health timed out for grpc://127.0.0.1:31002",
			"grpc://127.0.0.1:31002", "timed out", "WARN"},
		{`{"timestamp":"2026-08-22 10:00:02","level":"WARN","message":"HTTP health check failed for http://127.0.0.1:31001/health: timed out","target":"smg::worker::worker","filename":"model_gateway/src/worker/worker.rs","line_number":1768}`,
			"http://127.0.0.1:31001", "timed out", "WARN"},
	} {
		l, ok := ParseRouterLine(tc.line)
		if !ok || l.Kind != RWorkerDown || l.Worker != tc.worker || l.Detail != tc.detail || l.Level != tc.level || l.Time.IsZero() {
			t.Errorf("%q: %+v %v", tc.line, l, ok)
		}
	}
	l, ok := ParseRouterLine(`{"timestamp":"2026-08-22 10:00:03","level":"INFO","fields":{"message":"Router ready | workers: [\"http://127.0.0.1:31001\"]"},"target":"smg::server"}`)
	if !ok || l.Kind != RReady || l.Time.Second() != 3 {
		t.Errorf("JSON ready line: %+v %v", l, ok)
	}
	if _, ok := ParseRouterLine(`{"log":"x"}`); ok {
		t.Error("a JSON line without a level read as a router line")
	}
}

// smg's 2026 health, circuit-breaker and retry lines, text and --json-log
// (testdata/router/README.md names each source): each names its worker,
// from the text or from a structured field.
func TestSmgHealthLines2026(t *testing.T) {
	want := []struct {
		kind           RouterKind
		worker, detail string
	}{
		{RWorkerDown, "http://10.0.0.2:30000", "503 Service Unavailable"},
		{RWorkerDown, "http://10.0.0.2:30000", "Health check failed for worker http://10.0.0.2:30000: HTTP 503"},
		{RWorkerDown, "grpc://10.0.0.3:30001", `Status { code: Unavailable, message: "tcp connect error" }`},
		{RCircuitOpen, "http://10.0.0.2:30000", "closed -> open"},
		{RRetry, "", ""},
		{RWorkerDown, "http://10.0.0.2:30000", "503 Service Unavailable"},
		{RWorkerDown, "http://10.0.0.2:30000", "Health check failed for worker http://10.0.0.2:30000: HTTP 503"},
		{RCircuitOpen, "http://10.0.0.3:30001", "closed -> open"},
	}
	lines := strings.Split(strings.TrimSpace(string(readFixture(t, "smg_f8daa883_health.log"))), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i, line := range lines {
		l, ok := ParseRouterLine(line)
		w := want[i]
		if !ok || l.Kind != w.kind || l.Worker != w.worker || l.Detail != w.detail || l.Time.Year() != 2026 {
			t.Errorf("line %d: %+v, want %+v", i+1, l, w)
		}
	}
}

// smg's retry lines (testdata/router/smg_retry.log; README names the
// sources), in text with retry.rs's fields after the message and in
// --json-log form: each is a retry.
func TestSmgRetryLines(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(string(readFixture(t, "smg_retry.log"))), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4", len(lines))
	}
	for i, line := range lines {
		if l, ok := ParseRouterLine(line); !ok || l.Kind != RRetry || l.Level != "DEBUG" || l.Time.Year() != 2026 {
			t.Errorf("line %d: %+v %v", i+1, l, ok)
		}
	}
}
