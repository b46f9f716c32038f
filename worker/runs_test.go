package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// fakeServer answers the given paths with the given bodies (JSON or text)
// and 404 elsewhere, and records the paths asked.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits []string
}

func newFakeServer(t *testing.T, routes map[string]string) *fakeServer {
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits = append(f.hits, r.URL.Path)
		f.mu.Unlock()
		body, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if body == "500" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) asked() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.hits, " ")
}

func (f *fakeServer) describe(serverLog ...string) ServerSnapshot {
	return describeServer(context.Background(), NewClient(f.URL, "chat", "", 1), serverLog...)
}

func sglangInfo(kv string) string {
	b, _ := json.Marshal(map[string]any{
		"model_path": "/models/m", "tokenizer_path": "/models/m", "kv_cache_dtype": kv, "quantization": nil,
		"dtype": "auto", "tp_size": 8, "mem_fraction_static": 0.88, "page_size": 1, "version": "0.5.0",
		"internal_states":   []any{map[string]any{"max_total_num_tokens": 1048576}},
		"served_model_name": "m",
	})
	return string(b)
}

const modelInfo = `{"model_path":"/models/m","tokenizer_path":"/models/m","is_generation":true,"weight_version":"default"}`

func TestDescribeSGLang2026(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]string{"/server_info": sglangInfo("auto"), "/model_info": modelInfo})
	s := f.describe()
	if s.ConfigKey == ConfigUnknown || s.Error != "" {
		t.Fatalf("snapshot %+v", s)
	}
	if got := f.asked(); got != "/server_info /model_info" {
		t.Errorf("asked %q, want the 2026 names first and only", got)
	}
	for k, want := range map[string]any{"mem_fraction_static": 0.88, "page_size": 1.0, "max_total_num_tokens": 1048576.0, "kv_cache_dtype": "auto", "weight_version": "default"} {
		if s.Info[k] != want {
			t.Errorf("info[%s] = %v, want %v", k, s.Info[k], want)
		}
	}
	// the same server on 2025 names: the same configuration
	old := newFakeServer(t, map[string]string{"/get_server_info": sglangInfo("auto"), "/get_model_info": modelInfo})
	s2 := old.describe()
	if s2.ConfigKey != s.ConfigKey || s2.Error != "" {
		t.Errorf("2025 server: %+v, want key %s", s2, s.ConfigKey)
	}
	if got := old.asked(); got != "/server_info /get_server_info /model_info /get_model_info" {
		t.Errorf("2025 server asked %q", got)
	}
	// the KV pool's size is not a configuration
	moved := strings.Replace(sglangInfo("auto"), "1048576", "1040000", 1)
	s3 := newFakeServer(t, map[string]string{"/server_info": moved, "/model_info": modelInfo}).describe()
	if s3.ConfigKey != s.ConfigKey {
		t.Errorf("max_total_num_tokens changed the key: %s vs %s", s3.ConfigKey, s.ConfigKey)
	}
}

// kv_cache_dtype "auto" with an FP8 pool (from the checkpoint) is told
// apart by the scheduler's log line.
func TestDescribeSGLangResolvesAutoKVFromLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logWith := func(name, line string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("[2025-09-28 17:07:00] server_args=ServerArgs(...)\n"+line+"\n[2025-09-28 17:07:20] The server is fired up and ready to roll!\n"), 0o644)
		return p
	}
	fp8 := logWith("fp8.log", "[2025-09-28 17:07:10 TP0] Using KV cache dtype: torch.float8_e4m3fn")
	bf16 := logWith("bf16.log", "[2025-09-28 17:07:10 TP0] Using KV cache dtype: torch.bfloat16")
	f := newFakeServer(t, map[string]string{"/server_info": sglangInfo("auto"), "/model_info": modelInfo})
	a, b := f.describe(fp8), f.describe(bf16)
	if a.Info["kv_cache_dtype_resolved"] != "float8_e4m3fn" || b.Info["kv_cache_dtype_resolved"] != "bfloat16" {
		t.Fatalf("resolved: %v / %v", a.Info, b.Info)
	}
	if a.ConfigKey == b.ConfigKey || a.ConfigKey == ConfigUnknown || b.ConfigKey == ConfigUnknown {
		t.Errorf("fp8 and bf16 pools share key %s / %s", a.ConfigKey, b.ConfigKey)
	}
	// no log: the snapshot is whole, without the resolved dtype
	if n := f.describe(filepath.Join(dir, "absent.log")); n.ConfigKey == ConfigUnknown || n.Info["kv_cache_dtype_resolved"] != nil {
		t.Errorf("absent log: %+v", n)
	}
	// an explicit dtype is taken as said
	e := newFakeServer(t, map[string]string{"/server_info": sglangInfo("fp8_e5m2"), "/model_info": modelInfo}).describe(bf16)
	if e.Info["kv_cache_dtype_resolved"] != nil {
		t.Errorf("explicit dtype overridden from the log: %v", e.Info)
	}
}

func vllmMetrics(cacheDtype string) string {
	return `# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="` + cacheDtype + `",calculate_kv_scales="False",enable_prefix_caching="True",gpu_memory_utilization="0.9",num_gpu_blocks="27000",swap_space="4"} 1.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 0.0
`
}

func TestDescribeVLLM(t *testing.T) {
	t.Parallel()
	routes := func(dtype string) map[string]string {
		return map[string]string{
			"/metrics":   vllmMetrics(dtype),
			"/version":   `{"version":"0.11.0"}`,
			"/v1/models": `{"object":"list","data":[{"id":"m","object":"model","root":"/models/m","max_model_len":131072}]}`,
		}
	}
	fp8 := newFakeServer(t, routes("fp8"))
	a := fp8.describe()
	b := newFakeServer(t, routes("auto")).describe()
	if a.Error != "" || b.Error != "" || a.ConfigKey == ConfigUnknown {
		t.Fatalf("vllm snapshots: %+v / %+v", a, b)
	}
	if a.ConfigKey == b.ConfigKey {
		t.Errorf("fp8 and auto KV cache share key %s", a.ConfigKey)
	}
	for k, want := range map[string]any{"kv_cache_dtype": "fp8", "block_size": "16", "gpu_memory_utilization": "0.9", "version": "0.11.0", "served_model_name": "m", "model_path": "/models/m", "context_length": 131072.0, "server": "vllm"} {
		if a.Info[k] != want {
			t.Errorf("info[%s] = %v, want %v", k, a.Info[k], want)
		}
	}
	// dev mode answers /server_info with vllm_config: still read as vLLM
	r := routes("fp8")
	r["/server_info"] = `{"vllm_config":"model='m'","vllm_env":{},"system_env":{}}`
	if d := newFakeServer(t, r).describe(); d.ConfigKey != a.ConfigKey {
		t.Errorf("dev-mode vLLM: %+v, want key %s", d, a.ConfigKey)
	}
	// a part missing: unknown, not a hash of the rest
	r = routes("fp8")
	r["/version"] = "500"
	if d := newFakeServer(t, r).describe(); d.ConfigKey != ConfigUnknown || !strings.Contains(d.Error, "version") {
		t.Errorf("vLLM without /version: %+v", d)
	}
}

func TestDescribeFailedIsUnknown(t *testing.T) {
	t.Parallel()
	all500 := map[string]string{}
	for _, p := range []string{"/server_info", "/get_server_info", "/model_info", "/get_model_info", "/metrics", "/version", "/v1/models"} {
		all500[p] = "500"
	}
	for name, s := range map[string]ServerSnapshot{
		"all 500":          newFakeServer(t, all500).describe(),
		"all 404":          newFakeServer(t, nil).describe(),
		"model_info fails": newFakeServer(t, map[string]string{"/server_info": sglangInfo("auto")}).describe(),
		"empty info":       newFakeServer(t, map[string]string{"/server_info": `{}`, "/model_info": `{}`}).describe(),
	} {
		if s.ConfigKey != ConfigUnknown || s.Error == "" {
			t.Errorf("%s: %+v", name, s)
		}
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	s := describeServer(context.Background(), NewClient(url, "chat", "", 1))
	if s.ConfigKey != ConfigUnknown || !strings.Contains(s.Error, "server_info") {
		t.Errorf("refused connection: %+v", s)
	}
}

// runs.jsonl gets the same torn-tail repair as raw_responses.jsonl.
func TestAppendRunRepairsTornTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.jsonl")
	os.WriteFile(path, []byte(`{"run":"a","server_info":{"config_key":"aaa"}}`+"\n"+`{"run":"b","server_inf`), 0o644)
	cut, err := appendRun(dir, parse.RunLine{Run: "c", Snapshot: ServerSnapshot{ConfigKey: "ccc"}})
	if err != nil || cut != int64(len(`{"run":"b","server_inf`)) {
		t.Fatalf("cut %d, %v", cut, err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines: %q", data)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("not JSON: %q", l)
		}
	}
	if cut, err := appendRun(dir, parse.RunLine{Run: "d"}); cut != 0 || err != nil {
		t.Errorf("clean file: cut %d, %v", cut, err)
	}
}
