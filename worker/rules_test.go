package worker

import (
	"context"
	"errors"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/sim"
)

// The worker against the stand-in with SGLang's request rules on: held
// rids after a disconnect, aborts by prefix, 200 + abort answers, silent
// and failing streams. Every prompt ends with exactly one whole record and
// no aborted answer is kept.
func TestServerRulesEveryPromptOnceNoAbortKept(t *testing.T) {
	testgate.E2E(t) // 21 s: CI's end-to-end run, not the quick suite
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 300, "B2": 120})
	s := startSim(t, sim.Options{Speed: 100})
	s.SetFaults(sim.Faults{AbortRate: 0.1, HangRate: 0.02, StallMidStream: 0.03, StreamErrorRate: 0.03, ErrorRate: 0.05})
	cfg := Config{Root: root, Server: s.URL(), Concurrency: 16, IdleGap: 300 * time.Millisecond, MaxAttempts: 20}
	var log syncBuffer
	if err := Run(context.Background(), cfg, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for cat, n := range map[string]int{"B1": 300, "B2": 120} {
		checkOutput(t, root, cat, n)
		data, _ := os.ReadFile(filepath.Join(root, "prepared", cat, "raw_responses.jsonl"))
		if strings.Contains(string(data), `"finish_reason":"abort"`) {
			t.Fatalf("%s: an aborted answer was kept", cat)
		}
		if n := countLines(t, filepath.Join(root, "prepared", cat, "errors.jsonl")); n != 0 {
			t.Fatalf("%s: %d error lines for transient faults\n%s", cat, n, log.String())
		}
	}
	if live := s.LiveRIDs(); len(live) != 0 {
		t.Errorf("rids still live on the server: %v", live)
	}
}

func TestGenerateTemplatesChatPromptsWithOneBOS(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"A": 5})
	s := startSim(t, sim.Options{Speed: 100})
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), API: "generate"}, &syncBuffer{}); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "A", 5)
	ids := s.LastInputIDs()
	if len(ids) < 2 || ids[0] != 163584 || ids[1] == 163584 {
		t.Fatalf("input_ids sent to /generate: %v (want one BOS)", ids)
	}
	recs := rawLines(t, root)
	if recs[0]["prompt_ids"] == nil || recs[0]["output_ids"] == nil {
		t.Fatalf("record %v", recs[0])
	}

	// A 2025 build takes only "prompt" in /v1/tokenize: refused before any request.
	old := startSim(t, sim.Options{Speed: 100, NoTokenizeMessages: true})
	root2 := makeRoot(t, map[string]int{"A": 5})
	err := Run(context.Background(), Config{Root: root2, Server: old.URL(), API: "generate"}, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "cannot apply its chat template") {
		t.Fatalf("old server: %v", err)
	}
	if n := countLines(t, filepath.Join(root2, "prepared", "A", "raw_responses.jsonl")); n != 0 {
		t.Fatalf("%d records from a refused run", n)
	}
}

func TestVLLMReasoningAndAPIKeyAgainstSim(t *testing.T) {
	root := makeRoot(t, map[string]int{"A": 10})
	s := startSim(t, sim.Options{Speed: 100, Flavor: "vllm", APIKey: "k-123"})
	err := Run(context.Background(), Config{Root: root, Server: s.URL()}, &syncBuffer{})
	if !errors.Is(err, ErrSystemic) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without the key: %v", err)
	}
	t.Setenv(APIKeyEnv, "k-123")
	if err := Run(context.Background(), Config{Root: root, Server: s.URL()}, &syncBuffer{}); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "A", 10)
	for _, r := range rawLines(t, root) {
		if r["reasoning_content"] == nil || r["reasoning_content"] == "" {
			t.Fatalf("vLLM's message.reasoning was dropped: %v", r)
		}
	}
}

// rm -rf run/ under a running worker would let a second worker lock a new
// run/: the first one notices within a second and stops.
func TestReplacedRunDirStopsTheWorker(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"A": 2000})
	s := startSim(t, sim.Options{Speed: 5})
	done := make(chan error, 1)
	var log syncBuffer
	go func() { done <- Run(context.Background(), Config{Root: root, Server: s.URL(), Concurrency: 4}, &log) }()
	deadline := time.Now().Add(30 * time.Second)
	for countLines(t, filepath.Join(root, "prepared", "A", "raw_responses.jsonl")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.RemoveAll(filepath.Join(root, "run")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "lock:") {
			t.Fatalf("run ended with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the worker kept running after run/ was removed")
	}
	checkOutput(t, root, "A", -1)
}

// errors.jsonl gets the tail repair raw_responses.jsonl gets: a torn line
// from a killed worker is cut, not glued to the next error.
func TestErrorsFileTornTailIsRepaired(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"A": 3})
	dir := filepath.Join(root, "prepared", "A")
	f, _ := os.OpenFile(filepath.Join(dir, "prompts.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"no-messages","text":"chat needs messages"}` + "\n")
	f.Close()
	os.WriteFile(filepath.Join(dir, "errors.jsonl"), []byte(`{"id":"old","reason":"x"}`+"\n"+`{"id":"torn","rea`), 0o644)
	s := startSim(t, sim.Options{Speed: 100})
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL()}, &log); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "errors.jsonl"))
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `"id":"no-messages"`) || !strings.Contains(log.String(), "repaired torn tail of errors.jsonl") {
		t.Fatalf("errors.jsonl:\n%s\nlog:\n%s", data, log.String())
	}
}

// Python's json.dumps writes NaN and Infinity by default: in fields other
// than the id they hide nothing, in prompts and in old records.
func TestPythonNaNAndInfinityHideNoID(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "N")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(
		`{"id": 1, "messages": [{"role": "user", "content": "q"}], "score": NaN}`+"\n"+
			`{"id": 2, "messages": [{"role": "user", "content": "q"}], "low": -Infinity}`+"\n"+
			`{"id": 3, "messages": [{"role": "user", "content": "q"}]}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "raw_responses.jsonl"), []byte(`{"id": 2, "content": "x", "completion_tokens": Infinity}`+"\n"), 0o644)
	s := startSim(t, sim.Options{Speed: 100})
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL()}, &log); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "raw_responses.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 || strings.Count(string(data), `"id":1,`) != 1 || strings.Count(string(data), `"id":3,`) != 1 || strings.Contains(string(data), `"id":2,`) {
		t.Fatalf("raw_responses.jsonl:\n%s\nlog:\n%s", data, log.String())
	}
	if strings.Contains(log.String(), "Stop requested") {
		t.Errorf("a finished run logged a stop request:\n%s", log.String())
	}
}

func TestChatWithoutMessagesFailsTheCategoryAtOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "T")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(`{"id":1,"text":"a"}`+"\n"+`{"id":2,"input_ids":[1,2]}`+"\n"), 0o644)
	s := startSim(t, sim.Options{Speed: 100})
	log := runWorkerFailed(t, Config{Root: root, Server: s.URL()}, "T")
	if !strings.Contains(log, `ERROR: T: no prompt has "messages"`) || countLines(t, filepath.Join(dir, "errors.jsonl")) != 0 {
		t.Fatalf("log:\n%s", log)
	}
	if st := readState(t, root); st["categories"].([]any)[0].(map[string]any)["state"] != "failed" {
		t.Fatalf("state %v", st["categories"])
	}
}

func TestAPIKeyMustBeOneLine(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "key")
	os.WriteFile(p, []byte("sk-A\nsk-B\n"), 0o600)
	if _, err := loadAPIKey(Config{APIKeyFile: p}); err == nil || !strings.Contains(err.Error(), "one key on one line") {
		t.Fatalf("two keys: %v", err)
	}
	os.WriteFile(p, []byte("sk-A\r\n"), 0o600)
	if k, err := loadAPIKey(Config{APIKeyFile: p}); err != nil || k != "sk-A" {
		t.Fatalf("CRLF key: %q %v", k, err)
	}
}
