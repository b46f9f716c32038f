package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// Integrity review finding 4: n = 2 interleaved two answers into one
// record. It is refused at start, before any request, in words that say why.
func TestNAboveOneIsRefusedAtStart(t *testing.T) {
	t.Parallel()
	var posts atomic.Int64
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) { posts.Add(1) })
	root := promptsRoot(t, 2)
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte("[classes.SHORT]\nconcurrency = 2\nmax_tokens = 64\nsampling = { n = 2 }\n"), 0o644)
	err := Run(context.Background(), Config{Root: root, Server: ts.URL}, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "sampling n = 2") || !strings.Contains(err.Error(), "one answer per record") {
		t.Fatalf("run: %v", err)
	}
	if posts.Load() != 0 {
		t.Fatalf("%d requests sent", posts.Load())
	}
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte("[classes.SHORT]\nsampling = { n = 1 }\n"), 0o644)
	if err := Run(context.Background(), Config{Root: root, Server: startSim(t, sim.Options{Speed: 200}).URL()}, &syncBuffer{}); err != nil {
		t.Fatalf("n = 1: %v", err)
	}
}

// Integrity review finding 8: a stream that only sends ": ping" comments
// after its first chunk is silent, and is cut after --idle-timeout and
// retried; pings before that do not push the deadline back.
func TestPingsAreNotProgress(t *testing.T) {
	t.Parallel()
	ts, tries := attemptServer(t, func(w http.ResponseWriter, r *http.Request, req chatReq, n int) {
		sse(w, `{"choices":[{"index":0,"delta":{"role":"assistant","content":"x"},"finish_reason":null}]}`)
		if n == 1 {
			for {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
				fmt.Fprint(w, ": ping\n\n")
				w.(http.Flusher).Flush()
			}
		}
		sse(w, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`, `[DONE]`)
	})
	root := promptsRoot(t, 1)
	log, err := runBounded(t, Config{Root: root, Server: ts.URL, IdleGap: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	checkOutput(t, root, "A", 1)
	if n := tries("question 0"); n != 2 {
		t.Fatalf("%d attempts: the pinging stream should have been cut once", n)
	}
}

// Integrity review finding 9: a surrogate pair split across two events
// (a JS gateway slicing UTF-16) is one character, as python3's json.loads
// per chunk plus concatenation keeps it.
func TestSplitSurrogatePairIsJoined(t *testing.T) {
	t.Parallel()
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, `{"choices":[{"index":0,"delta":{"content":"emoji:\ud83d"},"finish_reason":null}]}`,
			`{"choices":[{"index":0,"delta":{"content":"\ude00!","reasoning_content":null},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}`, `[DONE]`)
	})
	c := NewClient(ts.URL, "chat", "m", 1)
	comp, err := c.Complete(context.Background(), "sw-x", Prompt{Messages: json.RawMessage(`[{"role":"user","content":"q"}]`)}, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *comp.Content != "emoji:😀!" {
		t.Fatalf("content %q", *comp.Content)
	}
}

// Integrity review finding 10: a stream cut after its finish_reason, before
// the usage chunk, is kept, but its counts are unknown (null), not 0; the
// log says so and the record reads back as having no count.
func TestStreamWithoutUsageHasUnknownTokens(t *testing.T) {
	t.Parallel()
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, `{"choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`) // then the connection ends
	})
	root := promptsRoot(t, 2)
	log, err := runBounded(t, Config{Root: root, Server: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "A", 2)
	for _, r := range rawLines(t, root) {
		if r["content"] != "hello" || r["completion_tokens"] != nil || r["prompt_tokens"] != nil {
			t.Fatalf("record %v: want completion_tokens and prompt_tokens null", r)
		}
	}
	data, _ := os.ReadFile(filepath.Join(root, "prepared", "A", "raw_responses.jsonl"))
	h, err := parse.ParseRecordHead(bytes.SplitN(data, []byte{'\n'}, 2)[0])
	if err != nil || h.HasTokens {
		t.Fatalf("read back: %+v %v", h, err)
	}
	if !strings.Contains(log, "sent no token counts") {
		t.Errorf("log:\n%s", log)
	}
}

// Issue 24.8: /generate through the sim in each streaming regime SGLang
// has: 2026 default (both cumulative), --incremental-streaming-output (both
// deltas) and 2025 --stream-output (cumulative text, delta ids). The sim's
// text is about 4 bytes a token and its answers come in up to 64 pieces, so
// a record whose text joined cumulative chunks (32 times too long) or kept
// only the last delta (64 times too short) is caught, as are ids that do
// not match completion_tokens.
func TestGenerateStreamingRegimesThroughSim(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]sim.Options{
		"2026 cumulative":    {Speed: 200},
		"2026 incremental":   {Speed: 200, IncrementalStreaming: true},
		"2025 stream-output": {Speed: 200, StreamOutput2025: true},
	} {
		t.Run(name, func(t *testing.T) {
			s := startSim(t, o)
			root := makeRoot(t, map[string]int{"A": 8})
			dir := filepath.Join(root, "prepared", "A")
			var b strings.Builder
			for i := range 8 {
				fmt.Fprintf(&b, `{"id":%d,"text":"question %d"}`+"\n", i, i)
			}
			os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(b.String()), 0o644)
			if err := Run(context.Background(), Config{Root: root, Server: s.URL(), API: "generate", Concurrency: 4}, &syncBuffer{}); err != nil {
				t.Fatal(err)
			}
			checkOutput(t, root, "A", 8)
			for _, r := range rawLines(t, root) {
				n := int(r["completion_tokens"].(float64))
				ids, _ := r["output_ids"].([]any)
				text, _ := r["text"].(string)
				if len(ids) != n || n == 0 {
					t.Fatalf("record %v: %d ids for %d tokens", r["id"], len(ids), n)
				}
				if len(text) < 4*n || len(text) > 4*n+10*64 {
					t.Fatalf("record %v: %d bytes of text for %d tokens: %.200q", r["id"], len(text), n, text)
				}
			}
		})
	}
}
