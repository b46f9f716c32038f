package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// statusJSON runs `status --json` and decodes its snapshot.
func statusJSON(t *testing.T, args ...string) snapshot.Snapshot {
	t.Helper()
	out, code := execCLI(t, append([]string{"status", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("status: code %d: %s", code, out)
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return s
}

// deadURL is a loopback address nothing listens on.
func deadURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

// serverRoot is a root whose server log ends as given, written just now.
func serverRoot(t *testing.T, dir, log string) string {
	t.Helper()
	root := filepath.Join(dir, "trial")
	for _, d := range []string{"prepared/B1", "logs"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "prepared", "B1", "prompts.jsonl"), []byte(`{"id":"B1-0","messages":[{"role":"user","content":"hi"}]}`+"\n"), 0o644)
	if err := os.WriteFile(filepath.Join(root, "logs", "sglang_inference.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// A one-shot status right after a crash (the 2026 native crash: a child
// killed by a signal, then SIGQUIT) says crashed, in text and --json,
// with the URL it probed and why that one.
func TestStatusRightAfterACrashSaysCrashed(t *testing.T) {
	log := "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n" +
		"[2026-11-29 02:59:50 TP0] Decode batch, #running-req: 10, #token: 100, token usage: 0.30, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 1\n" +
		"[2026-11-29 03:00:01] Subprocess scheduler_0 (pid=7391) crashed with exit code -6. Triggering SIGQUIT for cleanup...\n" +
		"[2026-11-29 03:00:01] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"
	root := serverRoot(t, t.TempDir(), log)
	url := deadURL(t)
	s := statusJSON(t, "--local", root, "--server-url", url)
	if s.Server.State != snapshot.ServerCrashed || !strings.Contains(s.Server.LastCrash, "scheduler_0") || s.Server.URL != url || s.Server.URLFrom != "flag --server-url" {
		t.Fatalf("server %+v", s.Server)
	}
	out, _ := execCLI(t, "status", "--local", root, "--server-url", url)
	if !strings.Contains(out, "server: crashed") || !strings.Contains(out, url+", flag --server-url") {
		t.Fatalf("status text:\n%s", out)
	}
}

// One server URL everywhere: pipeline.toml's server (the worker's) is
// probed unless the user chose one (flag, env, config.toml); a relative
// --local root keeps its server log.
func TestStatusProbesTheManifestsServer(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no config.toml
	t.Setenv("SYNTHWATCH_SERVER_URL", "")
	dir := t.TempDir()
	root := serverRoot(t, dir, "[2026-11-29 02:59:00] The server is fired up and ready to roll!\n")
	manifestURL := deadURL(t)
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte("server = \""+manifestURL+"\"\n"), 0o644)
	now := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(root, "logs", "sglang_inference.log"), now, now)
	t.Chdir(dir)
	s := statusJSON(t, "--local", "trial")
	if s.Server.URL != manifestURL || s.Server.URLFrom != "pipeline.toml server" {
		t.Fatalf("server %+v", s.Server)
	}
	if strings.Contains(s.Server.Reason, "no server log") || s.Server.State != snapshot.ServerDown {
		t.Fatalf("a relative --local lost the server log: %+v", s.Server)
	}
	envURL := deadURL(t)
	t.Setenv("SYNTHWATCH_SERVER_URL", envURL)
	if s = statusJSON(t, "--local", "trial"); s.Server.URL != envURL || s.Server.URLFrom != "env SYNTHWATCH_SERVER_URL" {
		t.Fatalf("env: server %+v", s.Server)
	}
}

// issue 39, through the binary's one-shot status: a vLLM whose worker died
// and which uvicorn then stopped says crashed, not stopped; a server
// whose decode lines stopped 20 s ago while only health checks arrive says
// idle with its last batch's time, not those figures as now's.
func TestStatusEndingsAndIdle(t *testing.T) {
	crash := "(APIServer pid=4170) INFO:     Application startup complete.\n" +
		"(APIServer pid=4170) INFO 11-29 02:59:50 [loggers.py:273] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 500.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: 0.0%\n" +
		"(EngineCore_DP0 pid=413) ERROR 11-29 03:00:01 [multiproc_executor.py:231] Worker proc VllmWorker-0 died unexpectedly, shutting down executor.\n" +
		"(APIServer pid=4170) INFO 11-29 03:00:09 [launcher.py:110] Shutting down FastAPI HTTP server.\n" +
		"(APIServer pid=4170) INFO:     Shutting down\n(APIServer pid=4170) INFO:     Finished server process [4170]\n"
	root := serverRoot(t, t.TempDir(), crash)
	url := deadURL(t)
	if s := statusJSON(t, "--local", root, "--server-url", url); s.Server.State != snapshot.ServerCrashed || !strings.Contains(s.Server.LastCrash, "Worker proc") {
		t.Fatalf("server %+v", s.Server)
	}
	if out, _ := execCLI(t, "status", "--local", root, "--server-url", url); !strings.Contains(out, "server: crashed") {
		t.Fatalf("status text:\n%s", out)
	}

	var idle strings.Builder
	idle.WriteString("[2026-11-29 02:59:00] The server is fired up and ready to roll!\n")
	for sec := 50; sec <= 55; sec++ {
		for i := 0; i < 3; i++ {
			fmt.Fprintf(&idle, "[2026-11-29 02:59:%02d TP0] Decode batch, #running-req: 24, #token: 9000, token usage: 0.30, cuda graph: True, gen throughput (token/s): 930.00, #queue-req: 0\n", sec)
		}
	}
	for sec := 0; sec <= 20; sec++ {
		fmt.Fprintf(&idle, "[2026-11-29 03:00:%02d] INFO:     127.0.0.1:5000 - \"GET /health HTTP/1.1\" 200 OK\n", sec)
	}
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(health.Close)
	root = serverRoot(t, t.TempDir(), idle.String())
	s := statusJSON(t, "--local", root, "--server-url", health.URL)
	if s.Server.State != snapshot.ServerReady || s.Server.GenThroughput != 0 || s.Server.LastBatch == nil || s.Server.LastBatch.GenThroughput != 930 {
		t.Fatalf("server %+v", s.Server)
	}
	if out, _ := execCLI(t, "status", "--local", root, "--server-url", health.URL); !strings.Contains(out, "server: ready (idle · last batch 02:59: 930 tok/s; log, ") {
		t.Fatalf("status text:\n%s", out)
	}
}
