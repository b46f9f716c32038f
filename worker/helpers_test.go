package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// makeRoot lays out a pipeline root with n prompts per category.
func makeRoot(t testing.TB, cats map[string]int) string {
	t.Helper()
	root := t.TempDir()
	for name, n := range cats {
		dir := filepath.Join(root, "prepared", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, `{"id":"%s-%d","messages":[{"role":"user","content":"question %d"}]}`+"\n", name, i, i)
		}
		if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// startSim starts an in-process sim on a free loopback port.
func startSim(t testing.TB, o sim.Options) *sim.Server {
	t.Helper()
	s := sim.New(o)
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitHealthy(t, s.URL())
	return s
}

func waitHealthy(t testing.TB, url string) {
	t.Helper()
	c := NewClient(url, "chat", "", 1)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c.Healthy(context.Background()) == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("sim at %s never became healthy", url)
}

// syncBuffer is a log sink safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// checkOutput asserts the contract on one category's output: every line is
// whole valid JSON, every id appears once, and (if want >= 0) there are want.
func checkOutput(t testing.TB, root, cat string, want int) map[string]int {
	t.Helper()
	ids, torn := checkOutputTorn(t, root, cat, want)
	if torn {
		t.Fatalf("%s: file does not end with a newline", cat)
	}
	return ids
}

// checkOutputTorn is checkOutput for a file just after a kill -9: a torn
// last line is allowed (the next start repairs it); it is reported.
func checkOutputTorn(t testing.TB, root, cat string, want int) (ids map[string]int, torn bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "prepared", cat, "raw_responses.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		data, torn = data[:i+1], true
	}
	ids = map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		var r struct {
			ID       any    `json:"id"`
			Category string `json:"category"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s line %d is not valid JSON: %v: %.80q", cat, line, err, sc.Text())
		}
		ids[fmt.Sprint(r.ID)]++
		if r.Category != cat {
			t.Fatalf("%s line %d has category %q", cat, line, r.Category)
		}
	}
	for id, n := range ids {
		if n != 1 {
			t.Fatalf("%s: id %s written %d times", cat, id, n)
		}
	}
	if want >= 0 && len(ids) != want {
		t.Fatalf("%s: %d distinct ids, want %d", cat, len(ids), want)
	}
	return ids, torn
}

func readState(t testing.TB, root string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "run", "worker.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("worker.json: %v", err)
	}
	return m
}

// stateNow is worker.json's state, "" while it cannot be read.
func stateNow(root string) string {
	data, err := os.ReadFile(filepath.Join(root, "run", "worker.json"))
	if err != nil {
		return ""
	}
	var m struct{ State string }
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	return m.State
}

// simMetrics is the sim's /metrics, parsed.
func simMetrics(t testing.TB, s *sim.Server) parse.ServerMetrics {
	t.Helper()
	r, err := http.Get(s.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	m, err := parse.ParseMetrics(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func countLines(t testing.TB, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte{'\n'})
}
