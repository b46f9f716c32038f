package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

const chatPath, genPath = "/v1/chat/completions", "/generate"

func raw(t *testing.T, url, body string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// events reads a text/event-stream body: the JSON of every data: line, and
// whether it ended with data: [DONE].
func events(t *testing.T, body io.Reader) (evs []map[string]any, done bool) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			return evs, true
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad event %q: %v", line, err)
		}
		evs = append(evs, m)
	}
	return evs, false
}

func stream(t *testing.T, url, body string) (*http.Response, []map[string]any, bool) {
	t.Helper()
	r, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	evs, done := events(t, r.Body)
	return r, evs, done
}

func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30s: %s", what)
		}
	}
}

func isLive(s *Server, rid string) bool {
	for _, r := range s.LiveRIDs() {
		if r == rid {
			return true
		}
	}
	return false
}

func TestDuplicateRIDIs400AndMissingRIDIsGenerated(t *testing.T) {
	s := start(t, Options{Speed: 10, ShortMean: 4000}) // ~10 s a request: still live
	go http.Post(s.URL()+chatPath, "application/json", strings.NewReader(`{"rid":"C1/2","messages":[1]}`))
	until(t, "C1/2 live", func() bool { return isLive(s, "C1/2") })
	code, body := raw(t, s.URL()+chatPath, `{"rid":"C1/2","messages":[1]}`)
	want := `{"code":400,"message":"Duplicate request ID detected: C1/2","object":"error","param":null,"type":"BadRequestError"}`
	if code != 400 || strings.TrimSpace(body) != want {
		t.Errorf("chat duplicate: %d %s", code, body)
	}
	code, body = raw(t, s.URL()+genPath, `{"rid":"C1/2","text":"hi"}`)
	if code != 400 || strings.TrimSpace(body) != `{"error":{"message":"Duplicate request ID detected: C1/2"}}` {
		t.Errorf("generate duplicate: %d %s", code, body)
	}
	go http.Post(s.URL()+genPath, "application/json", strings.NewReader(`{"text":"hi"}`))
	until(t, "a generated rid", func() bool { return len(s.LiveRIDs()) == 2 })
	for _, r := range s.LiveRIDs() {
		if r != "C1/2" && !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(r) {
			t.Errorf("generated rid %q is not uuid4 hex", r)
		}
	}
}

func TestDisconnectAbortsByPrefixAfterHold(t *testing.T) {
	// the requests take ~10 s; the hold is 300 ms (3 s at Speed 1)
	s := start(t, Options{Speed: 10, ShortMean: 4000, DisconnectHold: 3 * time.Second})
	type answer struct {
		rid  string
		code int
		m    map[string]any
	}
	answers := make(chan answer, 3)
	for _, rid := range []string{"C1/10", "C1/11"} {
		go func() {
			code, m := post(t, s.URL()+chatPath, `{"rid":"`+rid+`","messages":[1]}`)
			answers <- answer{rid, code, m}
		}()
	}
	go func() { // a sibling on /generate, streaming
		_, evs, done := stream(t, s.URL()+genPath, `{"rid":"C1/12","text":"hi","stream":true}`)
		answers <- answer{"C1/12", map[bool]int{true: 200}[done], evs[len(evs)-1]}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+chatPath, strings.NewReader(`{"rid":"C1/1","messages":[1]}`))
	go http.DefaultClient.Do(req)
	until(t, "four live", func() bool { return len(s.LiveRIDs()) == 4 })
	cancel() // the client of C1/1 gives up
	time.Sleep(100 * time.Millisecond)
	if code, body := raw(t, s.URL()+chatPath, `{"rid":"C1/1","messages":[1]}`); code != 400 || !strings.Contains(body, "Duplicate request ID detected: C1/1") {
		t.Errorf("retry within the hold: %d %s", code, body) // the server has not noticed yet
	}
	for range 3 {
		select {
		case a := <-answers:
			if a.code != 200 {
				t.Errorf("%s: %d", a.rid, a.code)
			}
			if a.rid == "C1/12" {
				fr := a.m["meta_info"].(map[string]any)["finish_reason"].(map[string]any)
				if fr["type"] != "abort" || fr["message"] == "" {
					t.Errorf("generate stream: %v", a.m)
				}
				continue
			}
			ch := a.m["choices"].([]any)[0].(map[string]any)
			if ch["finish_reason"] != "abort" {
				t.Errorf("%s: %v", a.rid, a.m)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("siblings not aborted")
		}
	}
	until(t, "nothing live", func() bool { return len(s.LiveRIDs()) == 0 })
	if code, _ := post(t, s.URL()+genPath, `{"rid":"C1/1","text":"hi","sampling_params":{"max_new_tokens":1}}`); code != 200 {
		t.Errorf("after the abort the rid is free again: %d", code)
	}
}

func TestAbortRateAnswers200Abort(t *testing.T) {
	s := start(t, Options{Speed: 200})
	s.SetFaults(Faults{AbortRate: 1})
	code, m := post(t, s.URL()+chatPath, `{"messages":[1],"max_tokens":400}`)
	ch := m["choices"].([]any)[0].(map[string]any)
	if code != 200 || ch["finish_reason"] != "abort" || m["usage"].(map[string]any)["completion_tokens"].(float64) == 0 {
		t.Errorf("chat: %d %v", code, m)
	}
	_, evs, done := stream(t, s.URL()+chatPath, `{"messages":[1],"stream":true}`)
	last := evs[len(evs)-1]["choices"].([]any)[0].(map[string]any)
	if !done || last["finish_reason"] != "abort" {
		t.Errorf("chat stream: %v", evs[len(evs)-1])
	}
}

func TestGenerateSamplingParamsAreStrict(t *testing.T) {
	s := start(t, Options{Instant: true})
	for _, k := range SamplingParamsFields {
		if code, body := raw(t, s.URL()+genPath, `{"text":"hi","sampling_params":{"`+k+`":null}}`); code != 200 {
			t.Errorf("%s: %d %s", k, code, body)
		}
	}
	for _, k := range []string{"seed", "max_tokens", "chat_template_kwargs"} {
		if code, body := raw(t, s.URL()+genPath, `{"text":"hi","sampling_params":{"`+k+`":1}}`); code != 500 || body != "Internal Server Error" {
			t.Errorf("%s: %d %q", k, code, body)
		}
	}
	if code, _ := raw(t, s.URL()+chatPath, `{"messages":[1],"seed":1,"no_such_field":{}}`); code != 200 {
		t.Errorf("chat must ignore unknown fields: %d", code)
	}
}

func TestTokenize(t *testing.T) {
	s := start(t, Options{Instant: true})
	msgs := `"messages":[{"role":"user","content":"hello there"}]`
	tokens := func(body string) []any {
		code, m := post(t, s.URL()+"/v1/tokenize", body)
		if code != 200 || m["count"].(float64) != float64(len(m["tokens"].([]any))) || m["max_model_len"].(float64) != contextLen {
			t.Fatalf("%s: %d %v", body, code, m)
		}
		return m["tokens"].([]any)
	}
	once := tokens(`{"model":"m",` + msgs + `,"add_special_tokens":false}`)
	twice := tokens(`{"model":"m",` + msgs + `,"add_special_tokens":true}`)
	if once[0].(float64) != BOS || once[1].(float64) == BOS || twice[0].(float64) != BOS || twice[1].(float64) != BOS || len(twice) != len(once)+1 {
		t.Errorf("BOS: once %v, twice %v", once, twice)
	}
	if p := tokens(`{"prompt":"hello there","add_special_tokens":false}`); len(p) != 2 {
		t.Errorf("prompt: %v", p)
	}
	ids := `[163584,1,2,3]`
	if code, _ := post(t, s.URL()+genPath, `{"input_ids":`+ids+`}`); code != 200 {
		t.Errorf("generate with input_ids: %d", code)
	}
	if got, _ := json.Marshal(s.LastInputIDs()); string(got) != ids {
		t.Errorf("last input_ids %s", got)
	}
	old := start(t, Options{Instant: true, NoTokenizeMessages: true})
	if code, _ := post(t, old.URL()+"/v1/tokenize", `{`+msgs+`}`); code != 400 {
		t.Errorf("2025 build took messages: %d", code)
	}
}

func TestChatStream(t *testing.T) {
	s := start(t, Options{Speed: 20, TokPerSec: 100})
	r, err := http.Post(s.URL()+chatPath, "application/json", strings.NewReader(`{"rid":"s1","messages":[1],"stream":true,"stream_options":{"include_usage":true},"max_tokens":400}`))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	var at []time.Time
	var evs []map[string]any
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok && line != "[DONE]" {
			var m map[string]any
			json.Unmarshal([]byte(line), &m)
			evs, at = append(evs, m), append(at, time.Now())
		}
	}
	if len(evs) < 10 {
		t.Fatalf("%d events", len(evs))
	}
	if at[len(at)-2].Sub(at[1]) < 50*time.Millisecond { // ~250 tokens at 2000 tok/s: ~125 ms of chunks
		t.Errorf("chunks not spread over the completion: %v", at[len(at)-2].Sub(at[1]))
	}
	delta := func(i int) map[string]any {
		return evs[i]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	}
	if evs[0]["object"] != "chat.completion.chunk" || delta(0)["role"] != "assistant" || delta(0)["content"] != "" {
		t.Errorf("first chunk %v", evs[0])
	}
	if delta(1)["reasoning_content"] == nil || delta(len(evs) - 3)["content"] == nil {
		t.Errorf("reasoning then content: %v ... %v", evs[1], evs[len(evs)-3])
	}
	fin := evs[len(evs)-2]["choices"].([]any)[0].(map[string]any)
	usage := evs[len(evs)-1]
	if fin["finish_reason"] != "stop" || len(usage["choices"].([]any)) != 0 || usage["usage"].(map[string]any)["total_tokens"] == nil {
		t.Errorf("finish %v usage %v", fin, usage)
	}
}

func TestGenerateStreamCumulativeByDefault(t *testing.T) {
	for _, inc := range []bool{false, true} {
		s := start(t, Options{Speed: 100, IncrementalStreaming: inc})
		_, evs, done := stream(t, s.URL()+genPath, `{"text":"hi","stream":true,"sampling_params":{"max_new_tokens":100}}`)
		if !done || len(evs) < 3 {
			t.Fatalf("incremental=%v: %d events, done %v", inc, len(evs), done)
		}
		ids, text := 0, 0
		for i, e := range evs {
			meta := e["meta_info"].(map[string]any)
			n := len(e["output_ids"].([]any))
			if inc {
				ids, text = ids+n, text+len(e["text"].(string))
			} else {
				ids, text = n, len(e["text"].(string))
			}
			if float64(ids) != meta["completion_tokens"].(float64) {
				t.Errorf("incremental=%v chunk %d: %d ids, completion_tokens %v", inc, i, ids, meta["completion_tokens"])
			}
			if (meta["finish_reason"] == nil) != (i < len(evs)-1) {
				t.Errorf("finish_reason on chunk %d: %v", i, meta["finish_reason"])
			}
		}
		if fr := evs[len(evs)-1]["meta_info"].(map[string]any)["finish_reason"].(map[string]any); fr["type"] != "length" || ids != 100 || text < 300 {
			t.Errorf("incremental=%v: end %v, %d ids, %d bytes", inc, fr, ids, text)
		}
	}
}

func TestStreamFaults(t *testing.T) {
	s := start(t, Options{Speed: 100, DisconnectHold: time.Second})
	s.SetFaults(Faults{StreamErrorRate: 1})
	_, evs, done := stream(t, s.URL()+chatPath, `{"messages":[1],"stream":true}`)
	if e, ok := evs[len(evs)-1]["error"].(map[string]any); !done || !ok || e["object"] != "error" || e["code"].(float64) != 400 {
		t.Errorf("chat error chunk: %v", evs[len(evs)-1])
	}
	_, evs, done = stream(t, s.URL()+genPath, `{"text":"hi","stream":true}`)
	if e, ok := evs[len(evs)-1]["error"].(map[string]any); !done || !ok || e["message"] == "" {
		t.Errorf("generate error chunk: %v", evs[len(evs)-1])
	}
	s.SetFaults(Faults{StallMidStream: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+chatPath, strings.NewReader(`{"messages":[1],"stream":true}`))
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	evs, done = events(t, r.Body) // ends when the client's timeout fires
	if done || len(evs) != 3 {    // the role chunk and two pieces, then nothing
		t.Errorf("gap: %d events, done %v", len(evs), done)
	}
}

func TestVLLMFlavor(t *testing.T) {
	var log logBuf
	s := start(t, Options{Speed: 100, Flavor: "vllm", KVCacheDType: "fp8_e4m3", Log: &log})
	for p, want := range map[string]int{"/get_server_info": 404, "/server_info": 404, "/get_model_info": 404, "/model_info": 404, "/version": 200} {
		if r, err := http.Get(s.URL() + p); err != nil || r.StatusCode != want {
			t.Errorf("GET %s: %v %v", p, err, r.StatusCode)
		}
	}
	if code, body := raw(t, s.URL()+"/version", ""); code != 405 && !strings.Contains(body, "0.11.2") {
		t.Errorf("version %d %s", code, body)
	}
	if code, _ := raw(t, s.URL()+genPath, `{"text":"hi"}`); code != 404 {
		t.Errorf("/generate on vllm: %d", code)
	}
	_, m := post(t, s.URL()+chatPath, `{"rid":"x","messages":[1]}`)
	msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["reasoning"] == nil || msg["reasoning_content"] != nil {
		t.Errorf("vllm message %v", msg)
	}
	alias := start(t, Options{Speed: 100, Flavor: "vllm", ReasoningContentAlias: true})
	_, m = post(t, alias.URL()+chatPath, `{"messages":[1]}`)
	if msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any); msg["reasoning"] == nil || msg["reasoning"] != msg["reasoning_content"] {
		t.Errorf("alias: %v", msg)
	}
	r, _ := http.Get(s.URL() + "/metrics")
	text, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(text), `vllm:cache_config_info{block_size="16",cache_dtype="fp8_e4m3",`) || !strings.Contains(string(text), `gpu_memory_utilization="0.9"`) {
		t.Errorf("cache_config_info:\n%s", text)
	}
	met, err := parse.ParseMetrics(strings.NewReader(string(text)))
	if err != nil || met.Dialect != parse.DialectVLLM || met.GenTokens.V == 0 || met.PromptTokens.V == 0 || !met.RunningReqs.OK || !met.TokenUsage.OK {
		t.Errorf("vllm metrics %v %+v", err, met)
	}
}

func TestKVCacheDTypeAndLog(t *testing.T) {
	var log logBuf
	s := start(t, Options{Instant: true, KVCacheDType: "fp8_e4m3", ResolvedKVDType: "torch.float8_e4m3fn", Log: &log})
	r, _ := http.Get(s.URL() + "/get_server_info")
	var info map[string]any
	json.NewDecoder(r.Body).Decode(&info)
	r.Body.Close()
	if info["kv_cache_dtype"] != "fp8_e4m3" {
		t.Errorf("kv_cache_dtype %v", info["kv_cache_dtype"])
	}
	if !regexp.MustCompile(`(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP0\] Using KV cache dtype: torch\.float8_e4m3fn$`).MatchString(log.String()) {
		t.Errorf("log:\n%s", log.String())
	}
}

func TestAPIKey(t *testing.T) {
	for _, flavor := range []string{"sglang", "vllm"} {
		s := New(Options{Instant: true, APIKey: "k", Flavor: flavor})
		if err := s.Start("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, p := range []string{"/health", "/metrics"} {
			if r, err := http.Get(s.URL() + p); err != nil || r.StatusCode == 401 {
				t.Errorf("%s %s needs no key: %v %v", flavor, p, err, r)
			}
		}
		until(t, "ready", s.isReady)
		if code, body := raw(t, s.URL()+chatPath, `{"messages":[1]}`); code != 401 || strings.TrimSpace(body) != `{"error":"Unauthorized"}` {
			t.Errorf("%s without key: %d %s", flavor, code, body)
		}
		if code, _ := raw(t, s.URL()+chatPath, `{"messages":[1]}`, "Authorization", "Bearer k"); code != 200 {
			t.Errorf("%s with key: %d", flavor, code)
		}
	}
	s := start(t, Options{Instant: true, APIKey: "k"})
	if r, _ := http.Get(s.URL() + "/get_server_info"); r.StatusCode != 401 {
		t.Errorf("sglang server_info without key: %d", r.StatusCode)
	}
}

// The server closes a keep-alive connection idle for 5 s, as uvicorn's
// timeout_keep_alive=5.
func TestIdleConnectionsClosedAfter5s(t *testing.T) {
	s := start(t, Options{Instant: true})
	s.mu.Lock()
	idle := s.srv.IdleTimeout
	s.mu.Unlock()
	if idle != 5*time.Second {
		t.Errorf("IdleTimeout %v", idle)
	}
}
