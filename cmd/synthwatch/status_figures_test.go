package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// status against a 2026 SGLang with two DP ranks, every scheduler
// exporting and priority scheduling (the parse fixture, over real HTTP):
// --json carries the counts counted once, the latency percentiles (a
// one-shot read: since start; --follow's second poll: the window's), spec
// decode, a row per DP rank and the slow one; the text says the same.
func TestStatusServerFigures(t *testing.T) {
	raw, err := os.ReadFile("../../parse/testdata/metrics_sglang_2026_dp2_allsched_priority.prom")
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		text := string(raw)
		if n := hits.Add(1) - 1; n > 0 { // each later read: 10 more first tokens in (0.1,0.2]
			for _, le := range []string{"0.2", "0.4", "0.6", "0.8", "1.0", "2.0", "4.0", "6.0", "8.0", "10.0", "20.0", "40.0", "60.0", "80.0", "100.0", "200.0", "400.0", "+Inf"} {
				old := fmt.Sprintf(`sglang:time_to_first_token_seconds_bucket{model_name="m",engine_type="unified",le="%s"} `, le)
				i := strings.Index(text, old)
				j := i + len(old) + strings.Index(text[i+len(old):], "\n")
				var v float64
				fmt.Sscan(text[i+len(old):j], &v)
				text = text[:i] + old + fmt.Sprint(v+10*float64(n)) + text[j:]
			}
		}
		fmt.Fprint(w, text)
	}))
	t.Cleanup(srv.Close)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "prepared", "A"), 0o755) // one category: an empty prepared/ is exit 1
	os.WriteFile(filepath.Join(root, "prepared", "A", "prompts.jsonl"), []byte("{\"id\": 0}\n"), 0o644)
	bin := testbin.Path(t)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	status := func(args ...string) []byte {
		cmd := exec.Command(bin, append([]string{"status", "--local", root, "--server-url", srv.URL}, args...)...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("status %v: %v\n%s", args, err, out)
		}
		return out
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal(status("--json"), &s); err != nil {
		t.Fatal(err)
	}
	sv := s.Server
	if sv.RunningReqs != 64 || sv.QueueReqs != 5 || sv.GenThroughput != 1900 {
		t.Errorf("counted once: running %d queued %d gen %v", sv.RunningReqs, sv.QueueReqs, sv.GenThroughput)
	}
	if l := sv.Latency; l == nil || l.Scope != "lifetime" || l.TTFT == nil || l.TTFT.Count != 100 || l.TTFT.P50 != 0.4 || l.Queue == nil || l.Queue.Count != 100 {
		t.Errorf("latency %+v", l)
	}
	if sp := sv.Spec; sp == nil || sp.AcceptLength == nil || *sp.AcceptLength != 3 {
		t.Errorf("spec %+v", sp)
	}
	if len(sv.Rows) != 2 || !strings.HasSuffix(sv.Rows[1].Name, " dp1") || !sv.Rows[1].Slow || sv.Rows[0].State != snapshot.RowUp ||
		sv.Imbalance == nil || sv.Imbalance.Replica != sv.Rows[1].Name {
		t.Errorf("rows %+v imbalance %+v", sv.Rows, sv.Imbalance)
	}
	// the keys scripts read
	var generic map[string]any
	json.Unmarshal(status("--json"), &generic)
	server := generic["server"].(map[string]any)
	for _, k := range []string{"latency", "spec_decode", "replica_rows", "imbalance"} {
		if _, ok := server[k]; !ok {
			t.Errorf("server.%s missing: %v", k, server)
		}
	}
	if lat := server["latency"].(map[string]any); lat["ttft"].(map[string]any)["p99_s"] == nil {
		t.Errorf("latency.ttft.p99_s missing: %v", lat)
	}
	// two polls: the second's percentiles are the 10 requests between them
	lines := bytes.Split(bytes.TrimSpace(status("--json", "--follow", "--count", "2", "--poll", "300ms")), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	s = snapshot.Snapshot{}
	if err := json.Unmarshal(lines[1], &s); err != nil {
		t.Fatal(err)
	}
	if l := s.Server.Latency; l == nil || l.Scope != "window" || l.TTFT == nil || l.TTFT.Count != 10 || l.TTFT.P99 > 0.2 || l.TTFT.P50 <= 0.1 {
		t.Errorf("window latency %+v", l)
	}
	text := string(status())
	for _, want := range []string{"latency p50/p90/p99 (since start):  TTFT ", "ITL 18ms/", "spec decode accept length 3.00, rate 65%", "REPLICA", " dp1 ", "slow", "imbalance: "} {
		if !strings.Contains(text, want) {
			t.Errorf("text status lacks %q:\n%s", want, text)
		}
	}
}

// The text lines come from the Snapshot alone (no binary needed): a STALE
// row says its age, a DOWN row has no figures, host text is sanitised.
func TestStatusTextServerFigures(t *testing.T) {
	g := func(v float64) *float64 { return &v }
	age := 12.0
	s := snapshot.Snapshot{Host: "h", Root: "/r", Server: snapshot.Server{State: "busy", Source: "metrics",
		Latency:      &snapshot.Latency{Scope: "window", WindowSeconds: 300, AgeSeconds: 4, TTFT: &snapshot.Percentiles{P50: 0.4, P90: 0.6, P99: 1.9, Count: 10}},
		KVCacheDType: "fp8\x1b[2J",
		Rows: []snapshot.ReplicaRow{
			{Name: "a:1\tdp0", State: snapshot.RowUp, Source: "metrics", GenThroughput: g(1500), RunningReqs: 40},
			{Name: "b:1", State: snapshot.RowStale, Source: "metrics", GenThroughput: g(800), RunningReqs: 30, AgeSeconds: &age},
			{Name: "c:1", State: snapshot.RowDown},
		}}}
	var b bytes.Buffer
	printStatus(&b, s)
	out := b.String()
	for _, want := range []string{"latency p50/p90/p99 (5m, as of 4s ago):  TTFT 400ms/600ms/1.9s\n", "KV fp8", "a:1 dp0", "STALE 12s", "c:1"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "c:1") && strings.Count(line, "-") < 5 {
			t.Errorf("a DOWN row with figures: %q", line)
		}
	}
	if strings.ContainsRune(out, 0x1b) {
		t.Errorf("raw escape:\n%q", out)
	}
}
