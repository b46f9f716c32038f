package sim

import (
	"math"
	"time"
)

// answerLen draws an answer's length around mean (Options.AnswerDist);
// u and norm are the uniform and normal sources.
func answerLen(u, norm func() float64, mean int, dist string) int {
	m := float64(mean)
	switch dist {
	case "exp":
		return int(-m * math.Log(1-u()))
	case "lognormal":
		const sigma = 0.8
		return int(math.Exp(math.Log(m) - sigma*sigma/2 + sigma*norm()))
	}
	return int(m * (0.6 + 0.8*u()))
}

// A Shape is one server of the family the load model stands for, with the
// work it gets: its Options (Load set), the prompts' tokens and the
// max_tokens sent. The ranges follow SGLang's own (sgl-project/sglang):
//   - the KV pool (max_total_num_tokens) is what --mem-fraction-static
//     leaves of the GPUs after the weights (model_runner.py,
//     profile_max_num_token): ~40k tokens for a big model on few GPUs, ~190k
//     on the users' 8-GPU Kimi-K2.5 host, ~870k for a small model on an
//     H100 (the independent server of issue 40);
//   - max_running_requests defaults to max_total_num_tokens // 2, capped by
//     the req_to_token pool (python/sglang/srt/model_executor/
//     model_runner.py, "Init max running requests"; in 2024 the same rule in
//     managers/tp_worker.py), and users set it lower
//     (--max-running-requests 128);
//   - a decode step costs a fixed part (the weights read once, CUDA graph
//     launch: ~10–40 ms) plus a part per request and per KV token read; a
//     prefill ~20–80 µs a token on the same GPUs;
//   - answers are near their mean (a fixed task), exponential (ShareGPT-like
//     chat) or lognormal; prompts from 100 to 4,000 tokens.
type Shape struct {
	Name         string
	About        string
	Opts         Options
	PromptTokens int
	MaxTokens    int
}

// fastCost is a smaller model on the same GPUs: a cheaper fixed part and
// cheaper tokens (its best window is larger).
var fastCost = LoadCost{
	DecodeBase: 12 * time.Millisecond, DecodePerReq: 40 * time.Microsecond, DecodePerKV: 20,
	PrefillBase: 8 * time.Millisecond, PrefillPerTok: 8 * time.Microsecond,
}

// Shapes is the family the sweep benchmark runs (worker/window_bench_test.go),
// from a best fixed window of ~32 to ~1,000 (TestShapesBestWindows).
var Shapes = []Shape{
	{Name: "small-pool-long", About: "a big model on few GPUs: 48k-token pool, LONG answers",
		Opts: Options{MaxTotal: 48000, Capacity: 256, LongMean: 3800, LongAbove: 4096}, PromptTokens: 500, MaxTokens: 10240},
	{Name: "night-long", About: "the users' night: 190k pool, LONG answers (~72 running)",
		Opts: Options{LongMean: 3800, LongAbove: 4096}, PromptTokens: 500, MaxTokens: 10240},
	{Name: "night-mixed", About: "190k pool, 30 % LONG answers in a category",
		Opts: Options{ShortMean: 250, LongMean: 3800, LongShare: 0.3}, PromptTokens: 500, MaxTokens: 10240},
	{Name: "night-short", About: "190k pool, SHORT answers (~250 tokens)",
		Opts: Options{ShortMean: 250}, PromptTokens: 500, MaxTokens: 2048},
	{Name: "capped-short", About: "870k pool but --max-running-requests 128, SHORT chat answers (exponential)",
		Opts: Options{MaxTotal: 870000, Capacity: 128, ShortMean: 250, AnswerDist: "exp", Cost: fastCost}, PromptTokens: 300, MaxTokens: 2048},
	{Name: "prefill-heavy", About: "400k pool, 3,000-token prompts, short lognormal answers: prefill decides",
		Opts: Options{MaxTotal: 400000, Capacity: 1024, ShortMean: 200, AnswerDist: "lognormal"}, PromptTokens: 3000, MaxTokens: 2048},
	{Name: "big-pool-short", About: "a small model on an H100: 870k pool, SHORT answers, cheap steps",
		Opts: Options{MaxTotal: 870000, Capacity: 2048, ShortMean: 250, Cost: fastCost}, PromptTokens: 300, MaxTokens: 2048},
}

// ShapeByName finds a shape of the family.
func ShapeByName(name string) (Shape, bool) {
	for _, s := range Shapes {
		if s.Name == name {
			return s, true
		}
	}
	return Shape{}, false
}
