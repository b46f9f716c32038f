package pipeline

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
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
			want[snapshot.UnknownConfig]++
		case 4:
			fmt.Fprintf(&b, `{"id":"B1-%d","run":"r3","completion_tokens":40}`+"\n", i) // its server could not say
			want[snapshot.UnknownConfig]++
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
		t.Fatalf("configs %+v (line %q), want %v summing to DONE %d", v.Configs, snapshot.ConfigLine(v.Configs), want, v.Done)
	}
	if len(v.Runs) != 3 || v.Runs[0].PID != 41 || v.Runs[0].Config != "fp8-kv" || v.Runs[1].Config != "bf16" ||
		v.Runs[2].Config != snapshot.UnknownConfig || v.Runs[0].Records == nil || *v.Runs[0].Records != want["fp8-kv"] {
		t.Fatalf("runs %+v", v.Runs)
	}
	if !strings.Contains(v.Runs[0].Args, "kv_cache_dtype=fp8_e4m3") {
		t.Fatalf("server args %q", v.Runs[0].Args)
	}
}

// A run that starts while the dashboard watches (a restart from the
// dashboard) is named by its configuration on the poll after its first
// records are counted, as a fresh `status` names it: runs.jsonl is read
// again for a run the tally has not met, not only on the next full poll.
// Read here, and over sshd through the shell agent (whose request the
// cold batch's request builds from the same poller).
func TestProvenanceOfARunStartedWhileWatching(t *testing.T) {
	t.Parallel()
	t.Run("local", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		runStartedWhileWatching(t, root, localWatcher(t, root, newClock(), Options{}))
	})
	t.Run("ssh", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		h := newProxied(t, sshdtest.Start(t)).dial(t)
		t.Cleanup(func() { h.Close() })
		bin := filepath.Join(t.TempDir(), "no-synthwatch") // the shell agent
		runStartedWhileWatching(t, root, NewWatcher(h, Options{Host: "p", Root: root, ServerURL: closedURL(t), WorkerBin: bin}, nil))
	})
}

func runStartedWhileWatching(t *testing.T, root string, w *Watcher) {
	dir := filepath.Join(root, "prepared", "B1")
	mkdir(t, dir)
	write(t, filepath.Join(dir, "prompts.jsonl"), prompts("B1", 40))
	runs := filepath.Join(dir, "runs.jsonl")
	raw := filepath.Join(dir, "raw_responses.jsonl")
	write(t, runs, `{"run":"r1","pid":41,"server_info":{"info":{"kv_cache_dtype":"fp8_e4m3"},"config_key":"k1"}}`+"\n")
	rec := func(from, to int, run string) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, `{"id":"B1-%d","run":%q,"completion_tokens":10}`+"\n", i, run)
		}
		return b.String()
	}
	write(t, raw, rec(0, 10, "r1"))
	poll(w)
	poll(w) // no longer the first, full, poll
	appendTo(t, runs, `{"run":"r2","pid":42,"server_info":{"info":{"kv_cache_dtype":"auto"},"config_key":"k2"}}`+"\n")
	appendTo(t, raw, rec(10, 25, "r2"))
	poll(w) // counts r2's records
	s := poll(w)
	v := catByName(t, s, "B1")
	got := map[string]int64{}
	for _, c := range v.Configs {
		got[c.Config] = c.Records
	}
	if want := map[string]int64{"fp8-kv": 10, "auto-kv": 15}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("configs %v (line %q, read %s), want %v", got, snapshot.ConfigLine(v.Configs), s.Connection.Reader, want)
	}
}
