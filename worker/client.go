package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Client talks to an SGLang (or OpenAI-compatible) server.
type Client struct {
	Base  string // http://127.0.0.1:30000
	API   string // chat | generate
	Model string
	HTTP  *http.Client
	// IdleGap ends a streamed request that sends nothing for this long; a
	// request still producing tokens is never cut (DefaultIdleGap if 0).
	IdleGap time.Duration
	// OnWhole is told once per server URL, with why, when the client starts
	// asking that server for whole /generate answers (whole.go).
	OnWhole func(why string)

	// Priority is sent as X-SMG-Priority on every request (gateway.go); ""
	// sends none.
	Priority string

	apiKey  string // sent as Authorization: Bearer; never logged or stored
	wholeMu sync.Mutex
	whole   map[string]string // server URL → why it gets whole answers
}

// DefaultIdleGap is how long a streamed answer may stay silent. It covers a
// request queued or retracted behind a full batch.
const DefaultIdleGap = 5 * time.Minute

// NewClient returns a client whose connection pool fits the concurrency.
func NewClient(base, api, model string, concurrency int) *Client {
	tr := &http.Transport{
		Proxy:               nil, // the server is local to the host: never send prompts to a proxy
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        concurrency + 16,
		MaxIdleConnsPerHost: concurrency + 16,
		// SGLang's uvicorn closes idle connections after 5 s
		// (timeout_keep_alive=5); dropping ours first avoids sending a
		// request on a connection the server is closing.
		IdleConnTimeout:    4 * time.Second,
		DisableCompression: true,
	}
	return &Client{Base: strings.TrimRight(base, "/"), API: api, Model: model, HTTP: &http.Client{Transport: tr}}
}

// SetAPIKey makes every request carry the key (SGLang's and vLLM's --api-key).
func (c *Client) SetAPIKey(key string) { c.apiKey = strings.TrimSpace(key) }

func (c *Client) decorate(req *http.Request) {
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
}

// Prompt is one line of prompts.jsonl.
type Prompt struct {
	ID       json.RawMessage `json:"id"`
	Messages json.RawMessage `json:"messages,omitempty"`
	Text     json.RawMessage `json:"text,omitempty"`
	InputIDs json.RawMessage `json:"input_ids,omitempty"`
}

// Completion is what the server returned for one prompt.
type Completion struct {
	Content          *string
	Reasoning        *string
	Text             *string
	OutputIDs        json.RawMessage
	PromptIDs        json.RawMessage // the templated prompt, when the server made it
	PromptTokens     int
	CompletionTokens int
	// TokensUnknown: the server sent no counts (a chat stream that ended
	// without its usage chunk); the record says null, not 0
	TokensUnknown bool
	FinishReason  string
	// Streamed is, on an error, the tokens the attempt had streamed before
	// it failed: the wasted-token ledger's retried and aborted tokens
	Streamed int
}

// Complete sends one prompt and reads the streamed completion to its end.
func (c *Client) Complete(ctx context.Context, rid string, p Prompt, maxTokens int, sampling map[string]any) (Completion, error) {
	if c.API == "generate" {
		return c.generate(ctx, rid, p, maxTokens, sampling)
	}
	if len(p.Messages) == 0 {
		return Completion{}, &PermanentError{errors.New("prompt has no messages (api=chat)")}
	}
	body := chatParams(sampling)
	body["rid"] = rid
	body["messages"] = p.Messages
	body["max_tokens"] = maxTokens
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	if c.Model != "" {
		body["model"] = c.Model
	}
	acc := chatAccumulator{bound: newAnswerBound(maxTokens)}
	if err := c.stream(ctx, "/v1/chat/completions", body, 0, acc.bound, acc.chunk); err != nil {
		return Completion{Streamed: acc.streamed()}, err
	}
	comp, err := acc.result()
	if err != nil {
		comp.Streamed = acc.streamed()
	}
	return comp, err
}

func (c *Client) generate(ctx context.Context, rid string, p Prompt, maxTokens int, sampling map[string]any) (Completion, error) {
	sp := generateParams(sampling, maxTokens)
	base := c.Base
	var limit time.Duration // 0: streamed; else a whole answer cut after limit
	if c.wholeFor(base) {
		limit = c.wholeLimit(maxTokens)
	}
	body := map[string]any{"rid": rid, "stream": limit == 0, "sampling_params": sp}
	var promptIDs json.RawMessage
	switch {
	case len(p.Text) > 0:
		body["text"] = p.Text
	case len(p.InputIDs) > 0:
		body["input_ids"] = p.InputIDs
	case len(p.Messages) > 0:
		ids, err := c.Tokenize(ctx, p.Messages)
		if err != nil {
			return Completion{}, fmt.Errorf("template the prompt: %w", err)
		}
		body["input_ids"], promptIDs = ids, ids
	default:
		return Completion{}, &PermanentError{errors.New("prompt has no text, input_ids or messages (api=generate)")}
	}
	acc := generateAccumulator{bound: newAnswerBound(maxTokens)}
	if err := c.stream(ctx, "/generate", body, limit, acc.bound, acc.chunk); err != nil {
		return Completion{Streamed: acc.streamed()}, err
	}
	comp, err := acc.result()
	if err != nil {
		comp.Streamed = acc.streamed()
	}
	if err == nil && limit == 0 && acc.perTokenCumulative(askedInterval(sp), comp.CompletionTokens) {
		c.askWhole(base, acc.chunks, comp.CompletionTokens, askedInterval(sp))
	}
	comp.PromptIDs = promptIDs
	return comp, err
}

// Tokenize asks the server to apply its chat template to messages
// (SGLang's /v1/tokenize with messages). The template brings its own BOS,
// so add_special_tokens is false: a second BOS would change the prompt.
func (c *Client) Tokenize(ctx context.Context, messages json.RawMessage) (json.RawMessage, error) {
	body := map[string]any{"messages": messages, "add_special_tokens": false}
	if c.Model != "" {
		body["model"] = c.Model
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	raw, err := c.post(ctx, "/v1/tokenize", body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Tokens json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("decode /v1/tokenize answer: %w", err)
	}
	var ids []int64
	if json.Unmarshal(r.Tokens, &ids) != nil || len(ids) == 0 {
		return nil, fmt.Errorf("/v1/tokenize gave no token ids: %s", shorten(string(raw), 200))
	}
	return r.Tokens, nil
}

// post sends a JSON body and reads the whole answer.
func (c *Client) post(ctx context.Context, path string, body any) ([]byte, error) {
	resp, err := c.send(ctx, path, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	return data, nil
}

// send POSTs body and returns a 2xx response; any other status is an
// *HTTPError naming the URL.
func (c *Client) send(ctx context.Context, path string, body any) (*http.Response, error) {
	buf, err := json.Marshal(body)
	if err != nil {
		return nil, &PermanentError{fmt.Errorf("encode request: %w", err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, bytes.NewReader(buf))
	if err != nil {
		return nil, &PermanentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Priority != "" {
		req.Header.Set(PriorityHeader, c.Priority)
	}
	c.decorate(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if err := preempted(resp); err != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, &HTTPError{Status: resp.StatusCode, Method: http.MethodPost, URL: c.Base + path, Body: shorten(string(data), 300)}
	}
	return resp, nil
}

// Healthy asks GET /health with a short deadline.
func (c *Client) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/health", nil)
	if err != nil {
		return err
	}
	c.decorate(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &HTTPError{Status: resp.StatusCode, Method: http.MethodGet, URL: c.Base + "/health"}
	}
	return nil
}

// GetJSON fetches the first of paths that answers 200 with JSON.
func (c *Client) GetJSON(ctx context.Context, paths ...string) (map[string]any, error) {
	var last error
	for _, p := range paths {
		data, err := c.get(ctx, p)
		if err != nil {
			last = err
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			last = fmt.Errorf("GET %s: %w", p, err)
			continue
		}
		return m, nil
	}
	return nil, last
}

// get reads one small GET answer that must be 200.
func (c *Client) get(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return nil, err
	}
	c.decorate(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &HTTPError{Status: resp.StatusCode, Method: http.MethodGet, URL: c.Base + path, Body: shorten(string(data), 200)}
	}
	return data, nil
}

func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
