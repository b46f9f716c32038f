package worker

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

func TestRunCompletesEveryCategory(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1_glaive": 60, "B2_code": 40})
	s := startSim(t, sim.Options{Speed: 100})
	var log syncBuffer
	err := Run(context.Background(), Config{Root: root, Server: s.URL(), Concurrency: 8}, &log)
	if err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "B1_glaive", 60)
	checkOutput(t, root, "B2_code", 40)
	st := readState(t, root)
	if st["state"] != parse.WorkerDone {
		t.Errorf("worker.json state %v", st["state"])
	}
	// the log is in the format the parser knows, and it reads it back
	kinds := map[parse.WorkerKind]int{}
	for _, l := range strings.Split(log.String(), "\n") {
		kinds[parse.ParseWorkerLine(l).Kind]++
	}
	if kinds[parse.WProcessing] != 2 || kinds[parse.WPrompts] != 2 || kinds[parse.WRunning] != 2 || kinds[parse.WProgress] < 2 {
		t.Errorf("log kinds %v:\n%s", kinds, log.String())
	}
	// a second run skips both categories
	log = syncBuffer{}
	if err := Run(context.Background(), Config{Root: root, Server: s.URL()}, &log); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "skipped (already done:"); n != 2 {
		t.Errorf("want 2 skip lines, got %d:\n%s", n, log.String())
	}
	if runs := len(runLines(t, root, "B1_glaive")); runs != 1 {
		t.Errorf("runs.jsonl has %d lines, want 1 (a skip is not a run)", runs)
	}
}

func TestResumeAfterCleanStop(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 200})
	s := startSim(t, sim.Options{Speed: 60})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for countLines(t, filepath.Join(root, "prepared", "B1", "raw_responses.jsonl")) < 30 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	var log syncBuffer
	if err := Run(ctx, Config{Root: root, Server: s.URL(), Concurrency: 8, Grace: 5 * time.Second}, &log); err != nil {
		t.Fatal(err)
	}
	first := checkOutput(t, root, "B1", -1)
	if len(first) >= 200 || len(first) < 30 {
		t.Fatalf("stopped run wrote %d", len(first))
	}
	if st := readState(t, root); st["state"] != parse.WorkerStopped {
		t.Errorf("state after stop %v", st["state"])
	}
	log = syncBuffer{}
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), Concurrency: 8}, &log); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "B1", 200)
	want := parse.FormatResume("B1", 200, len(first), 200-len(first))
	if !strings.Contains(log.String(), want) {
		t.Errorf("resume line %q missing:\n%s", want, log.String())
	}
}

func TestTornTailIsRepaired(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 20})
	s := startSim(t, sim.Options{Speed: 100})
	out := filepath.Join(root, "prepared", "B1", "raw_responses.jsonl")
	whole := `{"id":"B1-0","category":"B1","run":"old","prompt_tokens":1,"completion_tokens":5,"finish_reason":"stop","latency_s":1,"finished_at":"x","content":"a"}` + "\n"
	torn := `{"id":"B1-1","category":"B1","run":"old","prompt_tokens":1,"compl`
	if err := os.WriteFile(out, []byte(whole+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), Concurrency: 4}, &log); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "B1", 20)
	if !strings.Contains(log.String(), "repaired torn tail of raw_responses.jsonl: cut 65 bytes") {
		t.Errorf("no repair line:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "B1: 20 prompts, 1 resumed, 19 to go") {
		t.Errorf("resume count wrong:\n%s", log.String())
	}
}

func TestFlakyServerEverythingCompletes(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 300})
	s := startSim(t, sim.Options{Speed: 200})
	s.SetFaults(sim.Faults{ErrorRate: 0.2, ResetRate: 0.05, HangRate: 0.02})
	cfg := Config{Root: root, Server: s.URL(), Concurrency: 16, RequestTimeout: 300 * time.Millisecond}
	var log syncBuffer
	if err := Run(context.Background(), cfg, &log); err != nil {
		t.Fatal(err)
	}
	ids := checkOutput(t, root, "B1", -1)
	errs := countLines(t, filepath.Join(root, "prepared", "B1", "errors.jsonl"))
	if len(ids)+errs != 300 {
		t.Fatalf("%d done + %d errors != 300", len(ids), errs)
	}
	// a prompt that used up its attempts is retried by the next run
	s.SetFaults(sim.Faults{})
	if err := Run(context.Background(), cfg, &log); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "B1", 300)
}

func TestPermanentErrorsGoToErrorsFile(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 5})
	p := filepath.Join(root, "prepared", "B1", "prompts.jsonl")
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"bad","text":"no messages for chat"}` + "\n" + `not json at all` + "\n" + `{"id":"B1-0","messages":[]}` + "\n")
	f.Close()
	s := startSim(t, sim.Options{Speed: 100})
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL()}, &log); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "B1", 5)
	data, _ := os.ReadFile(filepath.Join(root, "prepared", "B1", "errors.jsonl"))
	if !strings.Contains(string(data), `"id":"bad"`) || strings.Count(string(data), "\n") != 1 {
		t.Errorf("errors.jsonl: %s", data)
	}
	if !strings.Contains(log.String(), "(1 err)") || !strings.Contains(log.String(), "1 prompt lines have no readable id") {
		t.Errorf("log:\n%s", log.String())
	}
}

func TestServerDownAtStartThenUp(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 30})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: connection refused
	done := make(chan error, 1)
	var log syncBuffer
	go func() {
		done <- Run(context.Background(), Config{Root: root, Server: "http://" + addr, Concurrency: 4}, &log)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(log.String(), "waiting for /health") {
		if time.Now().After(deadline) {
			t.Fatalf("worker did not wait for the server:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// worker.json is rewritten every second: wait for the rewrite that says so
	testgate.Eventually(t, 30*time.Second, "worker.json state "+parse.WorkerWaitingServer, func() bool {
		return stateNow(root) == parse.WorkerWaitingServer
	})
	s := sim.New(sim.Options{Speed: 100})
	if err := s.Start(addr); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("worker did not finish:\n%s", log.String())
	}
	checkOutput(t, root, "B1", 30)
	if !strings.Contains(log.String(), "is back after") {
		t.Errorf("no recovery line:\n%s", log.String())
	}
}

func TestServerCrashMidRun(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 150})
	s := startSim(t, sim.Options{Speed: 50})
	go func() {
		for countLines(t, filepath.Join(root, "prepared", "B1", "raw_responses.jsonl")) < 20 {
			time.Sleep(10 * time.Millisecond)
		}
		s.Crash(time.Second)
	}()
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), Concurrency: 8}, &log); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "B1", 150)
	if !strings.Contains(log.String(), "waiting for /health") {
		t.Errorf("crash not waited out:\n%s", log.String())
	}
}

func TestCapsSamplesAndTokenBudget(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 100, "B2": 400})
	manifest := `
[classes.SHORT]
concurrency = 8
[[categories]]
name = "B1"
max_samples = 30
[[categories]]
name = "B2"
token_budget = 20000
`
	if err := os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSim(t, sim.Options{Speed: 100})
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL()}, &log); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "B1", 30)
	scan, err := ScanFile(filepath.Join(root, "prepared", "B2", "raw_responses.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// ~250 tokens each: the budget stops B2 far short of its 400 prompts,
	// with an overshoot of at most the requests in flight.
	var tokens int64
	for _, n := range scan.Tokens {
		tokens += n
	}
	if tokens < 20000 || tokens > 20000+8*400 || len(scan.Tokens) > 150 {
		t.Errorf("B2: %d records, %d tokens", len(scan.Tokens), tokens)
	}
	if !strings.Contains(log.String(), "B2: token budget reached:") || !strings.Contains(log.String(), "overshoot") {
		t.Errorf("no budget line:\n%s", log.String())
	}
	// resuming a capped category skips it: max_samples counts resumed records
	log = syncBuffer{}
	if err := Run(context.Background(), Config{Root: root, Server: s.URL()}, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "B1: skipped (already done: 30 records)") || !strings.Contains(log.String(), "B2: token budget reached (") {
		t.Errorf("caps not honoured on resume:\n%s", log.String())
	}
}

func TestLockOneWorkerPerRoot(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 1})
	l, err := AcquireLock(filepath.Join(root, "run"))
	if err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), Config{Root: root, Server: "http://127.0.0.1:1"}, &syncBuffer{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "pid ") {
		t.Fatalf("second worker: %v", err)
	}
	l.Release()
}

func TestGenerateAPI(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "A")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(`{"id":1,"text":"hello"}`+"\n"+`{"id":2,"input_ids":[1,2,3]}`), 0o644)
	s := startSim(t, sim.Options{Speed: 100})
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), API: "generate"}, &syncBuffer{}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "raw_responses.jsonl"))
	if strings.Count(string(data), `"output_ids":[`) != 2 || !strings.Contains(string(data), `"id":2,`) {
		t.Errorf("generate output: %.300s", data)
	}
}

func TestOnlyOrdersCategories(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"A": 1, "B": 1, "C": 1})
	cfg := Config{Root: root, Only: []string{"C", "A", "B"}}
	cats, err := Plan(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cats[0].Name != "C" || cats[1].Name != "A" || cats[2].Name != "B" {
		t.Errorf("order %v", cats)
	}
	if _, err := Plan(&Config{Root: root, Only: []string{"nope"}}); err == nil {
		t.Error("unknown --only accepted")
	}
}

func TestAppenderRollsBackPartialWrite(t *testing.T) {
	// /dev/full fails every write with ENOSPC: the appender must report it
	// and leave no partial line behind (here: no line at all).
	t.Parallel()
	a := &Appender{path: "/dev/full"}
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	a.f = f
	err = a.Append([]byte("{\"id\":1}\n"))
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("want ENOSPC, got %v", err)
	}
	f.Close()
}
