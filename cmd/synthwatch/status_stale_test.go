package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// A Python-era root (no worker.json; the old script holds the log open)
// whose category stopped growing an hour ago, while the log still takes
// retry lines: a one-shot `status` says stalled, with how long, no rate
// and no ETA, in JSON and in text.
func TestStatusOneShotPythonRootStalled(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "B2_opencodeinstruct")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	var p, r strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&p, "{\"id\": \"b2-%d\", \"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}\n", i) // json.dumps spacing
	}
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&r, "{\"id\": \"b2-%d\", \"response\": \"ok\", \"completion_tokens\": 200}\n", i)
	}
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
	raw := filepath.Join(dir, "raw_responses.jsonl")
	os.WriteFile(raw, []byte(r.String()), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(raw, old, old)
	log := "Processing: B2_opencodeinstruct (SHORT)\nB2_opencodeinstruct: 1000 prompts\n" +
		"Running 1000 requests (concurrency=16, max_tokens=2048)...\n" +
		"300/1000 (0 err) 5.0 req/s avg_comp=200tok ETA=2m\n" + strings.Repeat("Retrying after error: Connection refused\n", 40)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte(log), 0o644)
	py := exec.Command("sh", "-c", "exec 3>>logs/inference_all.log; while :; do sleep 1; done", "python3", "run_inference.py")
	py.Dir = root
	py.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-py.Process.Pid, syscall.SIGKILL); py.Wait() })

	bin := testbin.Path(t)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	var s snapshot.Snapshot
	deadline := time.Now().Add(60 * time.Second)
	for {
		cmd := exec.Command(bin, "status", "--json", "--local", root, "--server-url", "http://127.0.0.1:1")
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		s = snapshot.Snapshot{}
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if snapshot.Alive(s.Worker.State) || time.Now().After(deadline) {
			break // the holder is found once /proc shows its fd
		}
		time.Sleep(200 * time.Millisecond)
	}
	c := catOf(t, s, "B2_opencodeinstruct")
	if c.State != snapshot.StateStalled || c.RatePerMin != 0 || c.ETASeconds != nil || s.ETASeconds != nil {
		t.Fatalf("one-shot status: %s %.1f/min eta %v (pipeline %v); worker %+v", c.State, c.RatePerMin, c.ETASeconds, s.ETASeconds, s.Worker)
	}
	if s.Worker.State != snapshot.WorkerStalled || !strings.Contains(s.Worker.Reason, "no new records for 1h00m") {
		t.Fatalf("worker: %+v", s.Worker)
	}
	cmd := exec.Command(bin, "status", "--local", root, "--server-url", "http://127.0.0.1:1")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "stalled") || !strings.Contains(string(out), "1h00m") {
		t.Fatalf("text status (%v):\n%s", err, out)
	}
}
