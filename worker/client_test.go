package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// streamServer is an httptest server on 127.0.0.1 with SGLang's /health and
// a chat or generate handler written per test.
func streamServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost { // server_info and the like: not this server
			w.WriteHeader(404)
			return
		}
		h(w, r)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

type chatReq struct {
	RID      string `json:"rid"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func readReq(t *testing.T, r *http.Request, v any) []byte {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		t.Error(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Errorf("request body: %v: %s", err, data)
	}
	return data
}

// sse writes events as SGLang's StreamingResponse does.
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

func chatStream(content, finish string) []string {
	return []string{
		`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"reasoning_content":"think"},"finish_reason":null}]}`,
		fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, content),
		fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":%q}]}`, finish),
		`{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`,
		`[DONE]`,
	}
}

func TestRidsArePrefixFreeAndNewPerAttempt(t *testing.T) {
	t.Parallel()
	r := &ridSource{run: "run1"}
	seen := map[string]bool{}
	var all []string
	for i := 0; i < 2000; i++ {
		id := fmt.Appendf(nil, "%d", i%200) // each id asked ten times: ten attempts
		rid := r.next("CAT", id)
		if seen[rid] {
			t.Fatalf("rid %s given twice", rid)
		}
		seen[rid] = true
		all = append(all, rid)
	}
	sort.Strings(all)
	for i := 1; i < len(all); i++ {
		if strings.HasPrefix(all[i], all[i-1]) || len(all[i]) != len(all[0]) {
			t.Fatalf("%s is a prefix of %s, or widths differ", all[i-1], all[i])
		}
	}
}

func TestChatStreamIsJoinedWithUsage(t *testing.T) {
	t.Parallel()
	var got chatReq
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		readReq(t, r, &got)
		sse(w, chatStream("hello", "stop")...)
	})
	c := NewClient(ts.URL, "chat", "m", 1)
	comp, err := c.Complete(context.Background(), "sw-x", Prompt{Messages: json.RawMessage(`[{"role":"user","content":"q"}]`)}, 10, map[string]any{"sampling_seed": 3})
	if err != nil {
		t.Fatal(err)
	}
	if *comp.Content != "hello" || *comp.Reasoning != "think" || comp.CompletionTokens != 7 || comp.PromptTokens != 5 || comp.FinishReason != "stop" {
		t.Fatalf("completion %+v", comp)
	}
	if !got.Stream || !got.StreamOptions.IncludeUsage || got.RID != "sw-x" {
		t.Fatalf("request %+v", got)
	}
}

func TestVLLMReasoningFieldIsKept(t *testing.T) {
	t.Parallel()
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req chatReq
		readReq(t, r, &req)
		if req.Messages[0].Content == "plain" { // a server that ignores stream: one JSON answer
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"a","reasoning":"r1"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`)
			return
		}
		sse(w, `{"choices":[{"delta":{"reasoning":"r2"},"finish_reason":null}]}`, `{"choices":[{"delta":{"content":"b"},"finish_reason":"length"}]}`, `[DONE]`)
	})
	c := NewClient(ts.URL, "chat", "", 1)
	for q, want := range map[string]string{"plain": "r1", "stream": "r2"} {
		comp, err := c.Complete(context.Background(), "rid", Prompt{Messages: json.RawMessage(fmt.Sprintf(`[{"role":"user","content":%q}]`, q))}, 10, nil)
		if err != nil || comp.Reasoning == nil || *comp.Reasoning != want {
			t.Fatalf("%s: %+v %v", q, comp, err)
		}
	}
}

func TestErrorClasses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want errClass
	}{
		{&HTTPError{Status: 400, Body: `{"object":"error","message":"Duplicate request ID detected: sw-1"}`}, retryable},
		{&HTTPError{Status: 400, Body: "The input (300000 tokens) is longer than the model's context length"}, permanent},
		{&HTTPError{Status: 401}, systemic},
		{&HTTPError{Status: 404}, systemic},
		{&HTTPError{Status: 422}, systemic},
		{&HTTPError{Status: 429}, retryable},
		{&HTTPError{Status: 503}, retryable},
		{ErrAborted, retryable},
		{errIdle{time.Second}, retryable},
		{&PermanentError{errors.New("no messages")}, permanent},
	}
	for _, c := range cases {
		if got := classify(c.err); got != c.want {
			t.Errorf("%v: class %d, want %d", c.err, got, c.want)
		}
	}
}

// promptsRoot writes n chat prompts for category A.
func promptsRoot(t *testing.T, n int) string {
	t.Helper()
	root := makeRoot(t, map[string]int{"A": n})
	return root
}

func rawLines(t *testing.T, root string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "prepared", "A", "raw_responses.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// attemptServer is a chat server that hands each request its prompt's
// text and how many times that prompt was asked, this time included.
func attemptServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request, req chatReq, n int)) (*httptest.Server, func(string) int) {
	var mu sync.Mutex
	tries := map[string]int{}
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req chatReq
		readReq(t, r, &req)
		mu.Lock()
		tries[req.Messages[0].Content]++
		n := tries[req.Messages[0].Content]
		mu.Unlock()
		h(w, r, req, n)
	})
	return ts, func(q string) int { mu.Lock(); defer mu.Unlock(); return tries[q] }
}

func TestChatAbortAndDuplicateRIDAreRetried(t *testing.T) {
	t.Parallel()
	ts, _ := attemptServer(t, func(w http.ResponseWriter, r *http.Request, req chatReq, n int) {
		switch n {
		case 1: // HTTP 200 with finish_reason abort, as a weight update or a prefix fan-out gives
			sse(w, chatStream("partial", "abort")...)
		case 2: // the server still holds the last attempt
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"object":"error","message":"Duplicate request ID detected: %s","type":"BadRequestError","param":null,"code":400}`, req.RID)
		default:
			sse(w, chatStream("whole answer", "stop")...)
		}
	})
	root := promptsRoot(t, 20)
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: ts.URL, Concurrency: 4}, &log); err != nil {
		t.Fatal(err)
	}
	recs := rawLines(t, root)
	checkOutput(t, root, "A", 20)
	for _, r := range recs {
		if r["finish_reason"] != "stop" || r["content"] != "whole answer" {
			t.Fatalf("kept %v", r)
		}
	}
	if n := countLines(t, filepath.Join(root, "prepared", "A", "errors.jsonl")); n != 0 {
		t.Fatalf("%d error lines for transient answers", n)
	}
}

func TestSystemicRefusalStopsTheRunWithOneError(t *testing.T) {
	t.Parallel()
	const key = "sk-very-secret-key"
	var requests atomic.Int64
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"Unauthorized"}`)
			return
		}
		io.Copy(io.Discard, r.Body)
		sse(w, chatStream("ok", "stop")...)
	})
	root := promptsRoot(t, 50)
	var log syncBuffer
	err := Run(context.Background(), Config{Root: root, Server: ts.URL, Concurrency: 4}, &log)
	if !errors.Is(err, ErrSystemic) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), ts.URL+"/v1/chat/completions") {
		t.Fatalf("run error: %v\n%s", err, log.String())
	}
	if n := countLines(t, filepath.Join(root, "prepared", "A", "errors.jsonl")); n != 0 {
		t.Fatalf("%d per-prompt error lines for a systemic 401", n)
	}
	if st := readState(t, root); st["state"] != "failed" {
		t.Fatalf("worker.json state %v", st["state"])
	}
	if requests.Load() > 20 {
		t.Fatalf("%d requests before stopping", requests.Load())
	}

	// With the key from a file, the same root completes, and the key is
	// nowhere on disk but in its file.
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
	log = syncBuffer{}
	if err := Run(context.Background(), Config{Root: root, Server: ts.URL, Concurrency: 4, APIKeyFile: keyFile, Args: []string{"worker", "--api-key-file", keyFile}}, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	checkOutput(t, root, "A", 50)
	if strings.Contains(log.String(), key) {
		t.Fatal("the key is in the log")
	}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), key) {
				t.Errorf("the key is in %s", p)
			}
		}
		return nil
	})
}

func TestOnePromptRefusedIsThatPromptsError(t *testing.T) {
	t.Parallel()
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req chatReq
		readReq(t, r, &req)
		if req.Messages[0].Content == "question 3" { // a 422 for one malformed prompt only
			w.WriteHeader(422)
			io.WriteString(w, `{"detail":"invalid message"}`)
			return
		}
		sse(w, chatStream("ok", "stop")...)
	})
	root := promptsRoot(t, 30)
	if err := Run(context.Background(), Config{Root: root, Server: ts.URL, Concurrency: 2, MaxAttempts: 2}, &syncBuffer{}); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "A", 29)
	if n := countLines(t, filepath.Join(root, "prepared", "A", "errors.jsonl")); n != 1 {
		t.Fatalf("%d error lines, want 1", n)
	}
}

// A prompt that fails every attempt on a healthy server is given up on and
// logged so (the corpus harness looks for that line), and the next start
// redoes it.
func TestAPromptThatKeepsFailingIsRedoneByTheNextStart(t *testing.T) {
	t.Parallel()
	var healed atomic.Bool
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req chatReq
		readReq(t, r, &req)
		if req.Messages[0].Content == "question 3" && !healed.Load() {
			w.WriteHeader(500)
			io.WriteString(w, `{"object":"error","message":"Internal server error"}`)
			return
		}
		sse(w, chatStream("ok", "stop")...)
	})
	root := promptsRoot(t, 30)
	cfg := Config{Root: root, Server: ts.URL, Concurrency: 2, MaxAttempts: 2}
	var log syncBuffer
	if err := Run(context.Background(), cfg, &log); err != nil {
		t.Fatal(err)
	}
	if n := len(gaveUp.FindAllString(log.String(), -1)); n != 1 {
		t.Fatalf("%d gave-up lines, want 1:\n%s", n, log.String())
	}
	checkOutput(t, root, "A", 29)
	healed.Store(true)
	if err := Run(context.Background(), cfg, &syncBuffer{}); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "A", 30)
}

func TestSilentStreamIsRetriedSteadyStreamIsNot(t *testing.T) {
	t.Parallel()
	ts, tries := attemptServer(t, func(w http.ResponseWriter, r *http.Request, req chatReq, n int) {
		q := req.Messages[0].Content
		sse(w, `{"choices":[{"delta":{"role":"assistant"},"finish_reason":null}]}`)
		if q == "question 0" && n == 1 { // wedged after the first chunk
			<-r.Context().Done()
			return
		}
		// a long answer: one token every 40 ms for 1.2 s, far longer than the gap
		for i := 0; i < 30; i++ {
			time.Sleep(40 * time.Millisecond)
			sse(w, `{"choices":[{"delta":{"content":"x"},"finish_reason":null}]}`)
		}
		sse(w, `{"choices":[{"delta":{},"finish_reason":"stop"}]}`, `[DONE]`)
	})
	root := promptsRoot(t, 3)
	if err := Run(context.Background(), Config{Root: root, Server: ts.URL, Concurrency: 3, IdleGap: 400 * time.Millisecond}, &syncBuffer{}); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "A", 3)
	for _, r := range rawLines(t, root) {
		if r["content"] != strings.Repeat("x", 30) {
			t.Fatalf("record %v", r)
		}
	}
	if tries("question 0") != 2 || tries("question 1") != 1 || tries("question 2") != 1 {
		t.Fatalf("attempts %d %d %d: the wedged one twice, the steady ones once", tries("question 0"), tries("question 1"), tries("question 2"))
	}
}

func TestGenerateStreamCumulativeOrIncremental(t *testing.T) {
	t.Parallel()
	cum := []string{
		`{"text":"ab","output_ids":[1,2],"meta_info":{"completion_tokens":2,"finish_reason":null}}`,
		`{"text":"abcd","output_ids":[1,2,3,4],"meta_info":{"completion_tokens":4,"finish_reason":null}}`,
		`{"text":"abcde","output_ids":[1,2,3,4,5],"meta_info":{"prompt_tokens":9,"completion_tokens":5,"finish_reason":{"type":"stop","matched":5}}}`,
	}
	inc := []string{
		`{"text":"ab","output_ids":[1,2],"meta_info":{"completion_tokens":2,"finish_reason":null}}`,
		`{"text":"cd","output_ids":[3,4],"meta_info":{"completion_tokens":4,"finish_reason":null}}`,
		`{"text":"e","output_ids":[5],"meta_info":{"prompt_tokens":9,"completion_tokens":5,"finish_reason":{"type":"length","length":5}}}`,
	}
	for name, chunks := range map[string][]string{"cumulative": cum, "incremental": inc} {
		var a generateAccumulator
		for _, c := range chunks {
			if err := a.chunk([]byte(c)); err != nil {
				t.Fatal(err)
			}
		}
		comp, err := a.result()
		if err != nil || *comp.Text != "abcde" || string(comp.OutputIDs) != "[1,2,3,4,5]" || comp.CompletionTokens != 5 {
			t.Fatalf("%s: %+v %s %v", name, comp, comp.OutputIDs, err)
		}
	}
	var a generateAccumulator
	a.chunk([]byte(`{"text":"ab","output_ids":[1,2],"meta_info":{"completion_tokens":2,"finish_reason":{"type":"abort","message":"Abort before prefill"}}}`))
	if _, err := a.result(); !errors.Is(err, ErrAborted) {
		t.Fatalf("abort: %v", err)
	}
}

func TestGenerateWithChatPromptsIsTemplatedByTheServer(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var gen []map[string]any
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		readReq(t, r, &req)
		switch r.URL.Path {
		case "/v1/tokenize":
			if req["add_special_tokens"] != false || req["messages"] == nil {
				t.Errorf("tokenize request %v", req)
			}
			io.WriteString(w, `{"tokens":[163584,10,11,12],"count":4,"max_model_len":262144}`)
		case "/generate":
			mu.Lock()
			gen = append(gen, req)
			mu.Unlock()
			sse(w, `{"text":"done","output_ids":[7,8],"meta_info":{"prompt_tokens":4,"completion_tokens":2,"finish_reason":{"type":"stop"}}}`, `[DONE]`)
		default:
			w.WriteHeader(404)
		}
	})
	root := promptsRoot(t, 3)
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte("[classes.SHORT]\nmax_tokens = 99\n[classes.SHORT.sampling]\ntemperature = 0.6\nseed = 7\n\n[[categories]]\nname = \"A\"\nclass = \"SHORT\"\n"), 0o644)
	if err := Run(context.Background(), Config{Root: root, Server: ts.URL, API: "generate"}, &syncBuffer{}); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, root, "A", 3)
	if len(gen) != 3 {
		t.Fatalf("%d /generate requests", len(gen))
	}
	sp := gen[0]["sampling_params"].(map[string]any)
	if fmt.Sprint(gen[0]["input_ids"]) != "[163584 10 11 12]" || sp["sampling_seed"] != 7.0 || sp["seed"] != nil ||
		sp["max_new_tokens"] != 99.0 || sp["skip_special_tokens"] != false || sp["no_stop_trim"] != true || sp["temperature"] != 0.6 {
		t.Fatalf("generate request %v", gen[0])
	}
	for _, r := range rawLines(t, root) {
		if fmt.Sprint(r["prompt_ids"]) != "[163584 10 11 12]" || fmt.Sprint(r["output_ids"]) != "[7 8]" {
			t.Fatalf("record %v", r)
		}
	}
}

func TestGenerateRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	var gen atomic.Int64
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/generate" {
			gen.Add(1)
		}
		w.WriteHeader(404) // a server without /v1/tokenize for messages
	})
	root := promptsRoot(t, 3)
	err := Run(context.Background(), Config{Root: root, Server: ts.URL, API: "generate"}, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), `only "messages"`) || !strings.Contains(err.Error(), "input_ids") {
		t.Fatalf("run: %v", err)
	}
	if gen.Load() != 0 {
		t.Fatalf("%d /generate requests sent", gen.Load())
	}

	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte("[classes.SHORT.sampling]\nchat_template_kwargs = 1\n\n[[categories]]\nname = \"A\"\nclass = \"SHORT\"\n"), 0o644)
	err = Run(context.Background(), Config{Root: root, Server: ts.URL, API: "generate"}, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), `"chat_template_kwargs" is not a /generate sampling parameter`) {
		t.Fatalf("run: %v", err)
	}
}

func TestLegacyFinishReasons(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{`"stop"`: "stop", `"FINISH_LENGTH: 128"`: "length", `"FINISH_ABORT: x"`: "abort",
		`"FINISH_MATCHED_TOKEN: 2"`: "stop", `{"type":"abort","message":"m"}`: "abort", `null`: ""} {
		if got := finishType(json.RawMessage(raw)); got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
}
