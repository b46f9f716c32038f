package pipeline

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestProvenanceByConfig: records by server configuration from runs.jsonl
// and each record's run, in the shapes other tools write (Python's
// separators, other key orders, CRLF); records with no run, or a run
// runs.jsonl does not know, are "unknown config", not hidden; a run's end
// line is none of its runs.
func TestProvenanceByConfig(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B1")
	mkdir(t, dir)
	write(t, filepath.Join(dir, "prompts.jsonl"), prompts("B1", 20))
	write(t, filepath.Join(dir, "runs.jsonl"), strings.Join([]string{
		`{"run":"r1","pid":41,"started_at":"2026-03-01T01:00:00Z","version":"v1","server":"http://127.0.0.1:30000","server_info":{"info":{"kv_cache_dtype":"fp8_e4m3","model_path":"/m"},"config_key":"k1"}}`,
		`{"pid": 42, "run": "r2", "started_at": "2026-03-02T01:00:00Z", "server_info": {"config_key": "k2", "info": {"kv_cache_dtype": "auto", "kv_cache_dtype_resolved": "bfloat16", "model_path": "/m"}}}`,
		`{"run":"r3","server_info":{"config_key":"unknown","error":"server_info: connection refused"}}`,
		// how runs ended (the night report's): no run, no configuration
		`{"run":"r9","pid":49,"ended_at":"2026-03-02T03:00:00Z","end":"stopped","cause":"terminated signal received"}`,
	}, "\r\n")+"\r\n")
	var b strings.Builder
	want := map[string]int64{}
	for i := 0; i < 17; i++ {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, `{"id":"B1-%d","run":"r1","completion_tokens":10}`+"\n", i)
			want["fp8-kv"]++
		case 1, 2:
			fmt.Fprintf(&b, `{"completion_tokens": 20, "run": "r2", "id": "B1-%d"}`+"\r\n", i)
			want["bf16"]++
		case 3:
			fmt.Fprintf(&b, `{"id": "B1-%d", "completion_tokens": 30}`+"\n", i) // the old script: no run
			want[UnknownConfig]++
		case 4:
			fmt.Fprintf(&b, `{"id":"B1-%d","run":"r3","completion_tokens":40}`+"\n", i) // its server could not say
			want[UnknownConfig]++
		}
	}
	write(t, filepath.Join(dir, "raw_responses.jsonl"), b.String())
	w := localWatcher(t, root, newClock(), Options{})
	v := catByName(t, poll(w), "B1")
	got := map[string]int64{}
	var sum int64
	for _, c := range v.Configs {
		got[c.Config] = c.Records
		sum += c.Records
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || sum != v.Done {
		t.Fatalf("configs %+v (line %q), want %v summing to DONE %d", v.Configs, ConfigLine(v.Configs), want, v.Done)
	}
	if len(v.Runs) != 3 || v.Runs[0].PID != 41 || v.Runs[0].Config != "fp8-kv" || v.Runs[1].Config != "bf16" ||
		v.Runs[2].Config != UnknownConfig || v.Runs[0].Records == nil || *v.Runs[0].Records != want["fp8-kv"] {
		t.Fatalf("runs %+v", v.Runs)
	}
	if !strings.Contains(v.Runs[0].Args, "kv_cache_dtype=fp8_e4m3") {
		t.Fatalf("server args %q", v.Runs[0].Args)
	}
}
