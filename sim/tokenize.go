package sim

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
)

// Token ids of the sim's tokenizer (Kimi-K2's special tokens).
const (
	BOS          = 163584 // [BOS]
	tokImEnd     = 163586 // <|im_end|>
	tokUser      = 163587 // <|im_user|>
	tokAssistant = 163588 // <|im_assistant|>
	tokSystem    = 163594 // <|im_system|>
	tokMiddle    = 163601 // <|im_middle|>
)

const contextLen = 262144

// tokenizeRequest is SGLang's TokenizeRequest (python/sglang/srt/
// entrypoints/openai/protocol.py): prompt or messages; add_special_tokens
// defaults to true.
type tokenizeRequest struct {
	Prompt   *string `json:"prompt"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	AddSpecialTokens *bool `json:"add_special_tokens"`
}

// tokenize answers POST /v1/tokenize with {tokens, count, max_model_len}
// (TokenizeResponse, serving_tokenize.py). Messages are rendered with a
// template that starts with BOS; the tokenizer adds BOS too when
// add_special_tokens is true, so messages + add_special_tokens give BOS
// twice, as with real templates that contain {{bos_token}}.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	var req tokenizeRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorResponse("invalid JSON: "+err.Error(), "BadRequestError", 400))
		return
	}
	if s.opts.NoTokenizeMessages {
		req.Messages = nil // 2025 builds: TokenizeRequest has prompt only, and ignores the rest
	}
	if req.Prompt == nil && len(req.Messages) == 0 {
		// SGLang's RequestValidationError handler answers pydantic's error as a 400 ErrorResponse
		writeJSON(w, http.StatusBadRequest, errorResponse("1 validation error for TokenizeRequest\nprompt\n  Field required", "BadRequestError", 400))
		return
	}
	special := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	var toks []int
	if special {
		toks = append(toks, BOS)
	}
	if len(req.Messages) > 0 {
		toks = append(toks, BOS) // the chat template's own {{bos_token}}
		for _, m := range req.Messages {
			role := map[string]int{"system": tokSystem, "assistant": tokAssistant}[m.Role]
			if role == 0 {
				role = tokUser
			}
			toks = append(toks, role, tokMiddle)
			toks = append(toks, words2ids(contentText(m.Content))...)
			toks = append(toks, tokImEnd)
		}
		toks = append(toks, tokAssistant, tokMiddle) // add_generation_prompt
	} else {
		toks = append(toks, words2ids(*req.Prompt)...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": toks, "count": len(toks), "max_model_len": contextLen})
}

// contentText is a message's text: a string or a list of {type, text} parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// words2ids is a deterministic stand-in tokenizer: one id per word.
func words2ids(text string) []int {
	var ids []int
	for _, w := range strings.Fields(text) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(w))
		ids = append(ids, int(h.Sum32()%163000))
	}
	return ids
}
