package sim

import (
	"slices"
	"time"
)

// engine is the load model (Options.Load): SGLang's scheduler loop reduced
// to the bookkeeping that decides throughput under load, in virtual time.
// It does no I/O and keeps no clock; scheduler (sched.go) runs it in real
// time. Sources (sgl-project/sglang):
//   - python/sglang/srt/managers/scheduler.py: get_next_batch_to_run (a
//     prefill batch when the adder admits anything, else a decode step of the
//     running batch), update_running_batch (check_decode_mem, retract_decode,
//     new_token_ratio decay), __init__'s new-token estimation
//     (init_new_token_ratio = 0.7 × schedule_conservativeness; min = init ×
//     0.14; decay = (init − min) / 600 per decode step, global_config.py);
//   - python/sglang/srt/managers/schedule_policy.py, PrefillAdder: the
//     running requests reserve min(max_new_tokens − output, 4096) ×
//     new_token_ratio (CLIP_MAX_NEW_TOKENS_ESTIMATION); add_one_req refuses a
//     request (NO_TOKEN) once extend_input_len + min(max_new_tokens, 4096)
//     reaches rem_total_tokens = available − that offset, and books it in
//     full; running_bs + len(can_run_list) < max_running_requests;
//     chunked_prefill_size bounds the tokens of one prefill batch;
//   - python/sglang/srt/managers/schedule_batch.py, ScheduleBatch.
//     retract_decode: when the pool lacks one token per running request, sort
//     by (len(output_ids), −len(origin_input_ids)) descending and pop from the
//     end (fewest outputs first) until available ≥ retract_decode_steps (20) ×
//     the requests left; free their KV (reset_for_retract keeps the output,
//     which the next prefill computes again); new_token_ratio =
//     min(1, (Σ output + 20 × left) / Σ max_new_tokens).
//
// Time per forward pass (calibration, not SGLang's code): a decode step costs
// DecodeBase + DecodePerReq × batch + DecodePerKV × tokens held, so tokens/s
// = batch / step rises with the batch and flattens; a prefill batch costs
// PrefillBase + PrefillPerTok × its tokens, and decode waits for it.
type engine struct {
	maxTotal, maxRunning int
	cost                 LoadCost

	waiting, running []*sreq
	used             int // KV tokens held by running requests
	ratio            float64
	initRatio        float64
	minRatio, decay  float64
	retracted        int // requests retracted since the start
	lastRetract      int // the last retraction's count (the gauge)
}

// LoadCost is the forward-pass time model (Options.Cost): the step-time
// curve with the batch and the prefill speed.
type LoadCost struct {
	DecodeBase, DecodePerReq time.Duration
	DecodePerKV              float64 // nanoseconds per KV token read
	PrefillBase              time.Duration
	PrefillPerTok            time.Duration
}

// DefaultLoadCost is calibrated so that ~72 LONG requests (prompt ~500, answers
// ~3,800 tokens) fill a 190,000-token pool to usage ~0.96 at ~930 tok/s:
// 30 ms + 72 × 0.2 ms + 170,000 × 0.17 µs ≈ 73 ms a step.
var DefaultLoadCost = LoadCost{
	DecodeBase: 30 * time.Millisecond, DecodePerReq: 200 * time.Microsecond, DecodePerKV: 170,
	PrefillBase: 15 * time.Millisecond, PrefillPerTok: 40 * time.Microsecond,
}

const (
	clipMaxNew      = 4096 // CLIP_MAX_NEW_TOKENS_ESTIMATION
	retractSteps    = 20   // global_config.retract_decode_steps
	chunkedPrefill  = 8192 // --chunked-prefill-size
	decodeLogEvery  = 40   // --decode-log-interval
	initTokenRatio  = 0.7  // SGLANG_INIT_NEW_TOKEN_RATIO
	minRatioFactor  = 0.14 // SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
	ratioDecaySteps = 600  // SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
)

// sreq is one request inside the engine.
type sreq struct {
	prompt, maxNew, n int // prompt tokens, max_new_tokens, the answer's planned length
	out               int // output tokens so far
	need              int // the output its client waits for: no wake-up before (sched.go)
	kv                int // KV tokens held (0 while waiting)
	wasRetracted      bool
	finished, gone    bool // gone: aborted by the client
	wake              chan struct{}
}

func newEngine(maxTotal, maxRunning int, cost LoadCost) *engine {
	e := &engine{maxTotal: maxTotal, maxRunning: maxRunning, cost: cost}
	e.reset()
	return e
}

// reset empties the engine, as a restarted server starts.
func (e *engine) reset() {
	e.waiting, e.running, e.used = nil, nil, 0
	e.initRatio = initTokenRatio
	e.minRatio = e.initRatio * minRatioFactor
	e.decay = (e.initRatio - e.minRatio) / ratioDecaySteps
	e.ratio = e.initRatio
}

// stepResult says what one forward pass did.
type stepResult struct {
	dur       time.Duration
	prefill   bool
	newSeqs   int // prefill: requests admitted
	newTokens int // prefill: tokens computed
	decoded   int // decode: tokens generated
	retracted int
	ratioFrom float64
	changed   []*sreq // requests whose output grew or that finished
}

// step runs one pass of Scheduler.event_loop: drop aborted requests, try a
// prefill batch, else decode the running batch (retracting first if the pool
// is short). idle reports that there was nothing to do.
func (e *engine) step() (r stepResult, idle bool) {
	e.dropGone()
	if adm := e.admit(); len(adm) > 0 {
		r.prefill, r.newSeqs = true, len(adm)
		for _, q := range adm {
			// the prefill computes prompt and output so far and samples one token
			q.kv = q.prompt + q.out
			r.newTokens += q.kv
			q.out++
			q.kv++
			e.used += q.kv
			r.changed = append(r.changed, q)
		}
		e.running = append(e.running, adm...)
		r.dur = e.cost.PrefillBase + time.Duration(r.newTokens)*e.cost.PrefillPerTok
		e.finish(r.changed)
		return r, false
	}
	if len(e.running) == 0 {
		return r, true
	}
	if e.maxTotal-e.used < len(e.running) { // check_decode_mem
		r.ratioFrom = e.ratio
		r.retracted = e.retract()
	} else {
		e.ratio = max(e.ratio-e.decay, e.minRatio)
	}
	b := len(e.running)
	r.dur = e.cost.DecodeBase + time.Duration(b)*e.cost.DecodePerReq + time.Duration(float64(e.used)*e.cost.DecodePerKV)
	for _, q := range e.running {
		q.out++
		q.kv++
	}
	e.used += b
	r.decoded = b
	r.changed = append(r.changed, e.running...)
	e.finish(e.running)
	return r, false
}

// admit is PrefillAdder over the waiting queue, first come first served.
func (e *engine) admit() []*sreq {
	offset := 0.0
	for _, q := range e.running {
		offset += float64(min(q.maxNew-q.out, clipMaxNew)) * e.ratio
	}
	rem := float64(e.maxTotal-e.used) - offset
	var adm []*sreq
	budget := chunkedPrefill
	for len(e.waiting) > 0 && len(e.running)+len(adm) < e.maxRunning && budget > 0 {
		q := e.waiting[0]
		extend := q.prompt + q.out
		total := float64(extend + min(q.maxNew, clipMaxNew))
		if total >= rem {
			break // AddReqResult.NO_TOKEN
		}
		rem -= total
		budget -= extend
		adm = append(adm, q)
		e.waiting = e.waiting[1:]
	}
	return adm
}

// retract is ScheduleBatch.retract_decode; it returns how many went back.
func (e *engine) retract() int {
	idx := slices.Clone(e.running)
	slices.SortStableFunc(idx, func(a, b *sreq) int { // descending (out, -prompt)
		if a.out != b.out {
			return b.out - a.out
		}
		return a.prompt - b.prompt
	})
	var back []*sreq
	for first := true; first || e.maxTotal-e.used < retractSteps*len(idx); first = false {
		if len(idx) == 1 {
			break
		}
		q := idx[len(idx)-1]
		idx = idx[:len(idx)-1]
		e.used -= q.kv
		q.kv, q.wasRetracted = 0, true
		back = append(back, q)
	}
	e.running = slices.DeleteFunc(e.running, func(q *sreq) bool { return slices.Contains(back, q) })
	decoded, maxNew := 0, 0
	for _, q := range e.running {
		decoded += q.out
		maxNew += q.maxNew
	}
	if maxNew > 0 {
		e.ratio = min(1, float64(decoded+retractSteps*len(e.running))/float64(maxNew))
	}
	// _extend_requests_to_queue: they keep their place ahead of newer arrivals
	e.waiting = append(back, e.waiting...)
	e.retracted += len(back)
	e.lastRetract = len(back)
	return len(back)
}

// finish frees the KV of requests that reached their length.
func (e *engine) finish(qs []*sreq) {
	done := false
	for _, q := range qs {
		if q.out >= q.n {
			q.finished = true
			done = true
		}
	}
	if done {
		e.running = slices.DeleteFunc(e.running, func(q *sreq) bool {
			if q.finished {
				e.used -= q.kv
				q.kv = 0
			}
			return q.finished
		})
	}
}

// dropGone frees what aborted requests hold (Scheduler.abort_request).
func (e *engine) dropGone() {
	e.waiting = slices.DeleteFunc(e.waiting, func(q *sreq) bool { return q.gone })
	e.running = slices.DeleteFunc(e.running, func(q *sreq) bool {
		if q.gone {
			e.used -= q.kv
			q.kv = 0
		}
		return q.gone
	})
}
