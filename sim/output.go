package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// output writes one answer: a JSON body, or server-sent events when the
// request asked for "stream": true.
type output struct {
	s       *Server
	w       http.ResponseWriter
	j       *job
	started bool // stream: headers (and, for chat, the role chunk) sent
	sent    int  // stream: pieces already sent
}

func newOutput(s *Server, w http.ResponseWriter, j *job) *output {
	o := &output{s: s, w: w, j: j}
	if j.stream && !j.chat {
		// /generate returns a StreamingResponse at once, so its headers go
		// out before the first token (sgl-project/sglang,
		// python/sglang/srt/entrypoints/http_server.py, generate_request).
		o.start()
	}
	return o
}

// start sends the event-stream headers. Chat streams start at their first
// output: OpenAIServingChat._handle_streaming_request kick-starts the
// generator "to trigger validation before HTTP 200 is sent"
// (python/sglang/srt/entrypoints/openai/serving_chat.py).
func (o *output) start() {
	if o.started {
		return
	}
	o.started = true
	o.w.Header().Set("Content-Type", "text/event-stream")
	o.w.WriteHeader(http.StatusOK)
	if o.j.chat { // the first chunk: delta {role: assistant, content: ""}
		o.chatChunk(map[string]any{"role": "assistant", "content": ""}, nil)
	} else {
		o.flush()
	}
}

func (o *output) event(v any) {
	b, _ := json.Marshal(v)
	_, _ = o.w.Write(append(append([]byte("data: "), b...), "\n\n"...))
	o.flush()
}

func (o *output) flush() {
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (o *output) done() { _, _ = o.w.Write([]byte("data: [DONE]\n\n")); o.flush() }

// chunk streams the pieces up to n.
func (o *output) chunk(n int) {
	o.start()
	if o.j.chat {
		for _, p := range o.j.pieces[o.sent:n] {
			if p.reasoning {
				o.chatChunk(o.s.reasoningFields(p.text, map[string]any{}), nil)
			} else {
				o.chatChunk(map[string]any{"content": p.text}, nil)
			}
		}
	} else {
		o.event(o.generateBody(n, nil))
	}
	o.sent = n
}

// chatChunk is one ChatCompletionStreamResponse (python/sglang/srt/
// entrypoints/openai/protocol.py), as serving_chat._generate_chat_stream
// builds it.
func (o *output) chatChunk(delta map[string]any, finish any) {
	choice := map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}
	if !o.s.vllm() {
		choice["matched_stop"] = nil
	}
	o.event(map[string]any{
		"id": o.j.id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": o.j.model,
		"choices": []map[string]any{choice}, "usage": nil,
	})
}

// finish answers after n pieces; abort, if set, is the abort finish reason.
func (o *output) finish(n int, abort map[string]any) {
	j := o.j
	finish := any(j.finish)
	if abort != nil {
		finish = "abort"
	}
	switch {
	case j.chat && j.stream:
		o.chunk(n)
		o.chatChunk(map[string]any{}, finish)
		if j.usage { // stream_options.include_usage: a last chunk with choices [] and usage
			o.event(map[string]any{"id": j.id, "object": "chat.completion.chunk", "created": time.Now().Unix(),
				"model": j.model, "choices": []any{}, "usage": o.usage(n)})
		}
		o.done()
	case j.chat:
		content, reasoning := o.texts(n)
		msg := map[string]any{"role": "assistant", "content": content}
		if reasoning != "" {
			o.s.reasoningFields(reasoning, msg)
		} else if !o.s.vllm() {
			msg["reasoning_content"] = nil
		}
		writeJSON(o.w, http.StatusOK, map[string]any{
			"id": j.id, "object": "chat.completion", "created": time.Now().Unix(), "model": j.model,
			"choices": []map[string]any{{"index": 0, "finish_reason": finish, "message": msg}},
			"usage":   o.usage(n),
		})
	default:
		fr := map[string]any{"type": j.finish}
		if abort != nil {
			fr = abort
		} else if j.finish == "length" {
			fr["length"] = j.n
		}
		body := o.generateBody(n, fr)
		if j.stream {
			o.event(body)
			o.done()
			return
		}
		writeJSON(o.w, http.StatusOK, body)
	}
}

// fail ends a stream with an error event, as SGLang does for a ValueError
// mid-stream: serving_chat yields create_streaming_error_response(...),
// http_server's stream_results yields {"error": {"message": ...}}; both then
// send data: [DONE].
func (o *output) fail(msg string) {
	o.start()
	if o.j.chat {
		o.event(map[string]any{"error": errorResponse(msg, "BadRequestError", http.StatusBadRequest)})
	} else {
		o.event(map[string]any{"error": map[string]any{"message": msg}})
	}
	o.done()
}

// generateBody is /generate's out_dict {text, output_ids, meta_info}. By
// default (incremental_streaming_output=False) stream chunks carry the
// cumulative text and output_ids; with IncrementalStreaming only the new
// part (OutputProcessor.handle_batch_output, python/sglang/srt/managers/
// tokenizer_manager_components/output_processor.py).
//
// StreamOutput2025 is a late-2025 server started with --stream-output:
// "text": state.text, always cumulative, but "output_ids":
// state.output_ids[state.last_output_offset:], deltas
// (python/sglang/srt/managers/tokenizer_manager.py, _handle_batch_output,
// the BatchStrOutput branch, 2025 builds).
func (o *output) generateBody(n int, finish any) map[string]any {
	from, idFrom := 0, 0
	if o.j.stream && o.s.opts.IncrementalStreaming {
		from, idFrom = o.sent, o.sent
	}
	if o.j.stream && o.s.opts.StreamOutput2025 {
		idFrom = o.sent
	}
	var text strings.Builder
	ids := []int{}
	for _, p := range o.j.pieces[from:n] {
		text.WriteString(p.text)
	}
	for _, p := range o.j.pieces[idFrom:n] {
		ids = append(ids, p.ids...)
	}
	return map[string]any{"text": text.String(), "output_ids": ids, "meta_info": map[string]any{
		"id": o.j.id, "finish_reason": finish, "prompt_tokens": o.j.promptTok,
		"completion_tokens": tokens(o.j.pieces[:n]), "cached_tokens": 0, "e2e_latency": 0.1,
	}}
}

func (o *output) texts(n int) (content, reasoning string) {
	var c, r strings.Builder
	for _, p := range o.j.pieces[:n] {
		if p.reasoning {
			r.WriteString(p.text)
		} else {
			c.WriteString(p.text)
		}
	}
	return c.String(), r.String()
}

func (o *output) usage(n int) map[string]any {
	c := tokens(o.j.pieces[:n])
	return map[string]any{"prompt_tokens": o.j.promptTok, "completion_tokens": c, "total_tokens": o.j.promptTok + c}
}

// reasoningFields sets the reasoning text under the flavour's name: SGLang's
// reasoning_content (ChatMessage / DeltaMessage), vLLM's reasoning
// (vllm/entrypoints/openai/protocol.py, ChatMessage.reasoning), plus the
// reasoning_content alias if asked.
func (s *Server) reasoningFields(text string, m map[string]any) map[string]any {
	if !s.vllm() || s.opts.ReasoningContentAlias {
		m["reasoning_content"] = text
	}
	if s.vllm() {
		m["reasoning"] = text
	}
	return m
}

// errorResponse is SGLang's ErrorResponse (protocol.py): object, message,
// type, param, code.
func errorResponse(msg, typ string, code int) map[string]any {
	return map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": code}
}

// badRequest answers a ValueError. Chat: create_error_response, an
// ErrorResponse with HTTP 400. /generate: _create_error_response,
// {"error": {"message": ...}} with 400, or, when streaming, the same object
// as an event followed by data: [DONE] (the StreamingResponse has started).
func (s *Server) badRequest(w http.ResponseWriter, chat, stream bool, msg string) {
	switch {
	case chat:
		writeJSON(w, http.StatusBadRequest, errorResponse(msg, "BadRequestError", http.StatusBadRequest))
	case stream:
		o := &output{s: s, w: w, j: &job{stream: true}}
		o.fail(msg)
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": msg}})
	}
}

// internalError is an exception the handler does not catch: starlette's
// ServerErrorMiddleware answers a plain "Internal Server Error" 500. In a
// /generate stream the headers are already out, so the connection just
// breaks.
func internalError(w http.ResponseWriter, stream bool) {
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write([]byte("Internal Server Error"))
}
