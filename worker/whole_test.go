package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// wireTap is a proxy in front of a server that records, for each /generate
// request in order, whether it asked to stream and how many answer bytes
// came back over the wire.
type wireTap struct {
	mu     sync.Mutex
	stream []bool
	bytes  []int64
}

func tapServer(t testing.TB, target string) (*wireTap, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tap := &wireTap{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // pass every event on at once
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/generate" {
			rp.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		rp.ServeHTTP(&countWriter{ResponseWriter: w, n: tap.add(req.Stream)}, r)
	}))
	t.Cleanup(ts.Close)
	return tap, ts.URL
}

// add books a request and returns its byte counter.
func (w *wireTap) add(stream bool) func(int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := len(w.stream)
	w.stream, w.bytes = append(w.stream, stream), append(w.bytes, 0)
	return func(n int) { w.mu.Lock(); w.bytes[i] += int64(n); w.mu.Unlock() }
}

func (w *wireTap) seen() ([]bool, []int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]bool(nil), w.stream...), append([]int64(nil), w.bytes...)
}

// countWriter counts the answer's body bytes; Unwrap lets the proxy flush.
type countWriter struct {
	http.ResponseWriter
	n func(int)
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n(n)
	return n, err
}

func (c *countWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Issue 24.8: through a gateway that drops stream_interval (smg), a
// 4,000-token answer streams as 4,000 cumulative chunks, quadratic bytes on
// the wire. The first request shows it and costs that; every later request
// asks for the whole answer and costs about the answer itself. The records
// written from a whole answer carry the same fields and figures as the one
// written from the stream; the worker log says it once, worker.json says
// why.
func TestWholeAnswersAfterPerTokenStream(t *testing.T) {
	t.Parallel()
	const n, prompts = 4000, 3
	s := startSim(t, sim.Options{Speed: 2000, ShortMean: 3 * n, DropStreamInterval: true})
	tap, server := tapServer(t, s.URL())
	root := textRoot(t, prompts)
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: server, API: "generate", Concurrency: 1, MaxTokens: n}, &log); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "A", prompts)
	recs := rawLines(t, root)
	streamed, wire := tap.seen()
	if want := []bool{true, false, false}; !reflect.DeepEqual(streamed, want) {
		t.Errorf("requests asked stream %v, want %v", streamed, want)
	}
	if len(streamed) != prompts || len(recs) != prompts {
		t.Fatalf("%d requests, %d records", len(streamed), len(recs))
	}
	for i, r := range recs {
		ids, _ := json.Marshal(r["output_ids"])
		answer := int64(len(r["text"].(string)) + len(ids))
		t.Logf("request %d (stream %v): %d bytes on the wire for a %d-byte answer", i, streamed[i], wire[i], answer)
		switch {
		case i == 0 && wire[i] < 100*answer: // the sum of 4,000 prefixes: ~2,000 answers
			t.Errorf("first request: %d bytes for a %d-byte answer: not the quadratic stream this test is about", wire[i], answer)
		case i > 0 && wire[i] >= 4*answer:
			t.Errorf("request %d: %d bytes for a %d-byte answer: not linear", i, wire[i], answer)
		}
	}
	// the records: the same fields, the same figures
	keys := func(r map[string]any) []string {
		var k []string
		for key := range r {
			k = append(k, key)
		}
		sort.Strings(k)
		return k
	}
	for i, r := range recs {
		if !reflect.DeepEqual(keys(r), keys(recs[0])) {
			t.Errorf("record %d has fields %v, the streamed one %v", i, keys(r), keys(recs[0]))
		}
		ids, _ := r["output_ids"].([]any)
		if r["completion_tokens"] != float64(n) || len(ids) != n || r["finish_reason"] != "length" ||
			len(r["text"].(string)) < 4*n || r["prompt_tokens"] != recs[0]["prompt_tokens"] || r["prompt_tokens"] == nil {
			t.Errorf("record %d: %d ids, %d bytes of text, %v", i, len(ids), len(r["text"].(string)),
				map[string]any{"completion_tokens": r["completion_tokens"], "prompt_tokens": r["prompt_tokens"], "finish_reason": r["finish_reason"]})
		}
	}
	var said []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.HasPrefix(l, "WARNING: "+server+" streamed /generate in ") {
			said = append(said, l)
		}
	}
	if len(said) != 1 || parse.ParseWorkerLine(said[0]).Kind == parse.WError {
		t.Errorf("the switch logged %d times (once, not as an error):\n%s", len(said), log.String())
	} else {
		t.Log(said[0])
	}
	if why, _ := readState(t, root)["whole_answers"].(string); !strings.Contains(why, server) || !strings.Contains(why, "stream_interval 32") {
		t.Errorf("worker.json whole_answers %q", why)
	}
}

// A server that honours stream_interval 32 keeps streaming (4,000 tokens
// in 127 chunks is the interval asked), and so does one that streams per
// token in deltas (--incremental-streaming-output): linear bytes already.
func TestStreamsThatCostLinearBytesStayStreamed(t *testing.T) {
	t.Parallel()
	const n = 4000
	for name, o := range map[string]sim.Options{
		"interval honoured": {Speed: 2000, ShortMean: 3 * n},
		"per-token deltas":  {Speed: 2000, ShortMean: 3 * n, DropStreamInterval: true, IncrementalStreaming: true},
	} {
		t.Run(name, func(t *testing.T) {
			tap, server := tapServer(t, startSim(t, o).URL())
			root := textRoot(t, 3)
			var log syncBuffer
			if err := Run(context.Background(), Config{Root: root, Server: server, API: "generate", Concurrency: 1, MaxTokens: n}, &log); err != nil {
				t.Fatal(err)
			}
			checkOutput(t, root, "A", 3)
			if streamed, _ := tap.seen(); !reflect.DeepEqual(streamed, []bool{true, true, true}) {
				t.Errorf("requests asked stream %v", streamed)
			}
			if strings.Contains(log.String(), "whole answers") || readState(t, root)["whole_answers"] != nil {
				t.Errorf("switched to whole answers:\n%s", log.String())
			}
		})
	}
}

// A whole answer sends nothing until it is done, so it has a total limit
// instead of the idle gap, and bytes trickling in (a proxy's keep-alive
// spaces) do not push it back. The decision is per server URL: another
// server's does not make this one's requests whole.
func TestWholeAnswerIsCutAtItsLimit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []bool
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req chatReq
		readReq(t, r, &req)
		mu.Lock()
		asked = append(asked, req.Stream)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	c := NewClient(ts.URL, "generate", "", 1)
	// the gap is 50 trickles long: a loaded machine under -race once stalled
	// a 10 ms trickle past a 100 ms gap (CI), which is no trickle at all
	c.IdleGap = 500 * time.Millisecond
	c.askWhole("http://127.0.0.1:1", 300, 300, 32) // another server
	p := Prompt{Text: json.RawMessage(`"q"`)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := c.Complete(ctx, "rid-1", p, 1200, nil) // streamed: the trickle keeps it alive
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("streamed request under a trickle: %v", err)
	}
	c.askWhole(ts.URL, 300, 300, 32)
	_, err = c.Complete(context.Background(), "rid-2", p, 1200, nil)
	var lim errWholeLimit
	if !errors.As(err, &lim) || lim.limit != time.Second || classify(err) != retryable {
		t.Fatalf("whole request: %v (%T)", err, err)
	}
	if !reflect.DeepEqual(asked, []bool{true, false}) {
		t.Errorf("requests asked stream %v", asked)
	}
}

// textRoot is a root whose category A has n /generate text prompts.
func textRoot(t testing.TB, n int) string {
	t.Helper()
	root := makeRoot(t, map[string]int{"A": n})
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":%d,"text":"question %d"}`+"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(root, "prepared", "A", "prompts.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// The same answer written from a per-token stream and from a whole answer
// gives the same record, byte for byte but for id, latency, time and seal. The
// server sends one fixed 300-token answer as SGLang shapes /generate's
// out_dict (text, output_ids, meta_info; cumulative chunks, the finish in
// the last: tokenizer_manager_components/output_processor.py @ 29ff63a5),
// streamed one token a chunk when asked to stream, else as one JSON body.
func TestWholeAnswerRecordEqualsStreamedRecord(t *testing.T) {
	t.Parallel()
	const n = 300
	body := func(k int, rid string) string {
		var text, ids strings.Builder
		for i := range k {
			fmt.Fprintf(&text, "tok%d ", i)
			if i > 0 {
				ids.WriteByte(',')
			}
			fmt.Fprint(&ids, 1000+i)
		}
		fin := "null"
		if k == n {
			fin = fmt.Sprintf(`{"type":"length","length":%d}`, n)
		}
		return fmt.Sprintf(`{"text":%q,"output_ids":[%s],"meta_info":{"id":%q,"finish_reason":%s,"prompt_tokens":7,"completion_tokens":%d,"cached_tokens":0,"e2e_latency":0.5}}`,
			text.String(), ids.String(), rid, fin, k)
	}
	var mu sync.Mutex
	var asked []bool
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/generate" { // the start's checks
			w.WriteHeader(http.StatusNotFound)
			return
		}
		var req chatReq
		readReq(t, r, &req)
		mu.Lock()
		asked = append(asked, req.Stream)
		mu.Unlock()
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintln(w, body(n, req.RID))
			return
		}
		events := make([]string, 0, n+1)
		for k := 1; k <= n; k++ {
			events = append(events, body(k, req.RID))
		}
		sse(w, append(events, "[DONE]")...)
	})
	root := textRoot(t, 3)
	if err := Run(context.Background(), Config{Root: root, Server: ts.URL, API: "generate", Concurrency: 1, MaxTokens: n}, &syncBuffer{}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(asked, []bool{true, false, false}) {
		t.Fatalf("requests asked stream %v", asked)
	}
	data, err := os.ReadFile(filepath.Join(root, "prepared", "A", "raw_responses.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"id", "latency_s", "finished_at", "sw_crc"} { // sw_crc: the seal, over id and time too
			if _, ok := r[k]; !ok {
				t.Fatalf("record without %s: %s", k, l)
			}
			delete(r, k)
		}
		b, _ := json.Marshal(r)
		recs = append(recs, string(b))
	}
	if len(recs) != 3 || recs[1] != recs[0] || recs[2] != recs[0] {
		t.Fatalf("records differ:\nstreamed %s\nwhole    %s", recs[0], recs[1])
	}
	if !strings.Contains(recs[0], `"completion_tokens":300`) || !strings.Contains(recs[0], `"finish_reason":"length"`) || !strings.Contains(recs[0], `"prompt_tokens":7`) {
		t.Fatalf("record %.300s", recs[0])
	}
}
