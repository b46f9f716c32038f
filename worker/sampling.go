package worker

import (
	"fmt"
	"sort"
)

// generateFields are SGLang's SamplingParams fields: /generate builds
// SamplingParams(**sampling_params), so any other key is a TypeError that
// comes back as HTTP 500 for every prompt (sglang
// python/sglang/srt/sampling/sampling_params.py, class SamplingParams;
// tokenizer_manager.py _create_tokenized_object).
var generateFields = map[string]bool{
	"max_new_tokens": true, "stop": true, "stop_token_ids": true, "stop_regex": true,
	"temperature": true, "top_p": true, "top_k": true, "min_p": true,
	"frequency_penalty": true, "presence_penalty": true, "repetition_penalty": true,
	"min_new_tokens": true, "n": true, "json_schema": true, "regex": true, "ebnf": true,
	"structural_tag": true, "ignore_eos": true, "skip_special_tokens": true,
	"spaces_between_special_tokens": true, "no_stop_trim": true, "custom_params": true,
	"stream_interval": true, "logit_bias": true, "sampling_seed": true,
}

// toGenerate renames the OpenAI spellings of a class's sampling keys to
// SamplingParams' (ChatCompletionRequest.to_sampling_params does the same
// for chat: seed -> sampling_seed, max_tokens -> max_new_tokens).
var toGenerate = map[string]string{
	"seed": "sampling_seed", "max_tokens": "max_new_tokens", "max_completion_tokens": "max_new_tokens",
}

// toChat is the other way, for a class written with /generate's names.
var toChat = map[string]string{"sampling_seed": "seed", "max_new_tokens": "max_tokens"}

// checkSampling refuses, before any request, a sampling key that /generate
// would reject. Chat ignores unknown keys, so only generate is checked.
func checkSampling(api string, sampling map[string]any) error {
	if api != "generate" {
		return nil
	}
	var bad []string
	for k := range sampling {
		if to, ok := toGenerate[k]; ok {
			k = to
		}
		if !generateFields[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("sampling key %q is not a /generate sampling parameter (SGLang answers 500 to every request with it)", bad[0])
	}
	return nil
}

// checkOneAnswer refuses n != 1: a record holds one completion per prompt
// id, and SGLang streams n answers as chunks with their own choice index,
// which used to be interleaved into one record ("TheA cat dog sat ran.";
// integrity review finding 4).
func checkOneAnswer(sampling map[string]any) error {
	v, ok := sampling["n"]
	if !ok {
		return nil
	}
	switch n := v.(type) {
	case int64:
		if n == 1 {
			return nil
		}
	case float64:
		if n == 1 {
			return nil
		}
	}
	return fmt.Errorf("sampling n = %v: the worker keeps one answer per record; remove n (or set n = 1), and for several samples of a prompt give each copy its own id", v)
}

// generateParams is sampling_params for /generate. The faithful capture
// keeps special tokens and the stop string in the text, and streams every
// 32 tokens: cumulative chunks of a 10k-token answer would otherwise cost
// megabytes each.
func generateParams(sampling map[string]any, maxTokens int) map[string]any {
	sp := map[string]any{"skip_special_tokens": false, "no_stop_trim": true, "stream_interval": 32}
	for k, v := range sampling {
		if to, ok := toGenerate[k]; ok {
			k = to
		}
		sp[k] = v
	}
	sp["max_new_tokens"] = maxTokens // the class's max_tokens is the one cap
	return sp
}

// chatParams is the class's sampling for /v1/chat/completions.
func chatParams(sampling map[string]any) map[string]any {
	out := make(map[string]any, len(sampling))
	for k, v := range sampling {
		if to, ok := toChat[k]; ok {
			k = to
		}
		out[k] = v
	}
	return out
}
