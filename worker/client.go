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
	"syscall"
	"time"
)

// Client talks to an SGLang (or OpenAI-compatible) server.
type Client struct {
	Base  string // http://127.0.0.1:30000
	API   string // chat | generate
	Model string
	HTTP  *http.Client
}

// NewClient returns a client whose connection pool fits the concurrency.
func NewClient(base, api, model string, concurrency int) *Client {
	tr := &http.Transport{
		Proxy:               nil, // the server is local to the host: never send prompts to a proxy
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        concurrency + 16,
		MaxIdleConnsPerHost: concurrency + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &Client{Base: strings.TrimRight(base, "/"), API: api, Model: model, HTTP: &http.Client{Transport: tr}}
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
	PromptTokens     int
	CompletionTokens int
	FinishReason     string
}

// HTTPError is a non-2xx answer.
type HTTPError struct {
	Status int
	Body   string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("server answered %d: %s", e.Status, e.Body)
}

// PermanentError marks a failure that retrying cannot fix (a 4xx, a prompt
// the server cannot take). It goes to errors.jsonl.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent tells errors that go to errors.jsonl from ones to retry.
func IsPermanent(err error) bool {
	var p *PermanentError
	if errors.As(err, &p) {
		return true
	}
	var h *HTTPError
	if errors.As(err, &h) {
		return h.Status >= 400 && h.Status < 500 && h.Status != 408 && h.Status != 429
	}
	return false
}

// IsServerDown is true when nothing listens: waiting for /health beats
// burning through retries.
func IsServerDown(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

// Complete sends one prompt and waits for the whole completion.
func (c *Client) Complete(ctx context.Context, rid string, p Prompt, maxTokens int, sampling map[string]any) (Completion, error) {
	body := map[string]any{"rid": rid}
	var path string
	switch c.API {
	case "generate":
		path = "/generate"
		sp := map[string]any{"max_new_tokens": maxTokens}
		for k, v := range sampling {
			sp[k] = v
		}
		body["sampling_params"] = sp
		switch {
		case len(p.Text) > 0:
			body["text"] = p.Text
		case len(p.InputIDs) > 0:
			body["input_ids"] = p.InputIDs
		default:
			return Completion{}, &PermanentError{errors.New("prompt has neither text nor input_ids (api=generate)")}
		}
	default:
		path = "/v1/chat/completions"
		if len(p.Messages) == 0 {
			return Completion{}, &PermanentError{errors.New("prompt has no messages (api=chat)")}
		}
		for k, v := range sampling {
			body[k] = v
		}
		body["messages"] = p.Messages
		body["max_tokens"] = maxTokens
		body["stream"] = false
		if c.Model != "" {
			body["model"] = c.Model
		}
	}
	raw, err := c.post(ctx, path, body)
	if err != nil {
		return Completion{}, err
	}
	if c.API == "generate" {
		return decodeGenerate(raw)
	}
	return decodeChat(raw)
}

func (c *Client) post(ctx context.Context, path string, body any) ([]byte, error) {
	buf, err := json.Marshal(body)
	if err != nil {
		return nil, &PermanentError{fmt.Errorf("encode request: %w", err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, bytes.NewReader(buf))
	if err != nil {
		return nil, &PermanentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, &HTTPError{Status: resp.StatusCode, Body: shorten(string(data), 300)}
	}
	return data, nil
}

func decodeChat(raw []byte) (Completion, error) {
	var r struct {
		Choices []struct {
			Message struct {
				Content          *string `json:"content"`
				ReasoningContent *string `json:"reasoning_content"`
			} `json:"message"`
			FinishReason json.RawMessage `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Completion{}, fmt.Errorf("decode chat answer: %w", err)
	}
	if len(r.Choices) == 0 {
		return Completion{}, fmt.Errorf("chat answer has no choices: %s", shorten(string(raw), 200))
	}
	ch := r.Choices[0]
	return Completion{
		Content: ch.Message.Content, Reasoning: ch.Message.ReasoningContent,
		PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens,
		FinishReason: finishType(ch.FinishReason),
	}, nil
}

func decodeGenerate(raw []byte) (Completion, error) {
	var r struct {
		Text      *string         `json:"text"`
		OutputIDs json.RawMessage `json:"output_ids"`
		Meta      struct {
			PromptTokens     int             `json:"prompt_tokens"`
			CompletionTokens int             `json:"completion_tokens"`
			FinishReason     json.RawMessage `json:"finish_reason"`
		} `json:"meta_info"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Completion{}, fmt.Errorf("decode generate answer: %w", err)
	}
	fr := finishType(r.Meta.FinishReason)
	if fr == "abort" {
		return Completion{}, fmt.Errorf("server aborted the request: %s", shorten(string(r.Meta.FinishReason), 200))
	}
	return Completion{
		Text: r.Text, OutputIDs: r.OutputIDs,
		PromptTokens: r.Meta.PromptTokens, CompletionTokens: r.Meta.CompletionTokens,
		FinishReason: fr,
	}, nil
}

// finishType reads "stop", or {"type": "length", ...} as SGLang's /generate
// returns it, or the v0.1 string "FINISH_LENGTH: 128".
func finishType(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Type
	}
	return ""
}

// Healthy asks GET /health with a short deadline.
func (c *Client) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &HTTPError{Status: resp.StatusCode, Body: "/health"}
	}
	return nil
}

// GetJSON fetches the first of paths that answers 200 with JSON.
func (c *Client) GetJSON(ctx context.Context, paths ...string) (map[string]any, error) {
	var last error
	for _, p := range paths {
		ctx1, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(ctx1, http.MethodGet, c.Base+p, nil)
		if err != nil {
			cancel()
			return nil, err
		}
		resp, err := c.HTTP.Do(req)
		if err != nil {
			cancel()
			last = err
			continue
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		cancel()
		if err != nil || resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("GET %s: status %d %v", p, resp.StatusCode, err)
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

func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
