package sim

import (
	"sync"
	"time"
)

// scheduler runs the engine in real time, compressed by Options.Speed (the
// --time-scale), and keeps the server's gauges, its Prefill/Decode/retract
// log lines and its counters in step with the engine's state.
type scheduler struct {
	s    *Server
	mu   sync.Mutex
	e    *engine
	kick chan struct{}

	vt                time.Duration // virtual time since the loop last woke from idle
	decodeSteps       int           // decode steps since the last Decode batch line
	genTok, inTok     int
	genSince, inSince time.Duration
	gen               float64       // the last gen throughput (token/s)
	lag, maxLag       time.Duration // how far the loop runs behind real time, in the model's time
	decoded           int64         // tokens generated since the start (prefills' first tokens included)
}

// SchedulerMaxLag is the largest SchedulerLag seen since the start: a
// benchmark whose sim fell behind by more than a step or two was not
// faithful to its time scale.
func (s *Server) SchedulerMaxLag() time.Duration {
	if s.sched == nil {
		return 0
	}
	s.sched.mu.Lock()
	defer s.sched.mu.Unlock()
	return s.sched.maxLag
}

// DecodedTokens is how many tokens the load model has generated, finished
// answers or not (0 without Options.Load): what a ramp's first minutes
// deliver, when LONG answers have not finished yet.
func (s *Server) DecodedTokens() int64 {
	if s.sched == nil {
		return 0
	}
	s.sched.mu.Lock()
	defer s.sched.mu.Unlock()
	return s.sched.decoded
}

// SchedulerLag is how far the load model runs behind real time × Speed,
// in the model's time (0 without Options.Load). A lag that grows means the
// machine cannot keep up with the Speed asked: benchmarks report it.
func (s *Server) SchedulerLag() time.Duration {
	if s.sched == nil {
		return 0
	}
	s.sched.mu.Lock()
	defer s.sched.mu.Unlock()
	return s.sched.lag
}

func (s *Server) startScheduler() {
	s.sched = &scheduler{s: s, e: newEngine(s.opts.MaxTotal, s.opts.Capacity, s.opts.Cost), kick: make(chan struct{}, 1)}
	s.wg.Add(1)
	go s.sched.loop()
}

// submit queues a request (TokenizerManager → Scheduler.handle_generate_request).
func (sc *scheduler) submit(prompt, maxNew, n int) *sreq {
	q := &sreq{prompt: prompt, maxNew: maxNew, n: n, wake: make(chan struct{}, 1)}
	sc.mu.Lock()
	sc.e.waiting = append(sc.e.waiting, q)
	sc.mu.Unlock()
	sc.publish()
	sc.poke()
	return q
}

func (sc *scheduler) poke() {
	select {
	case sc.kick <- struct{}{}:
	default:
	}
}

// cancel takes a request out (the client went away or it was aborted); a
// finished one is already out.
func (sc *scheduler) cancel(q *sreq) {
	sc.mu.Lock()
	q.gone = !q.finished
	sc.mu.Unlock()
	sc.poke()
}

// reached reports whether q has produced through tokens, and asks to be
// woken when it has.
func (sc *scheduler) reached(q *sreq, through int) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	q.need = through
	return q.out >= through
}

// reset drops every request: the server process died.
func (sc *scheduler) reset() {
	sc.mu.Lock()
	for _, q := range append(sc.e.waiting, sc.e.running...) {
		q.gone = true
	}
	sc.e.reset()
	sc.mu.Unlock()
	sc.publish()
}

func (sc *scheduler) loop() {
	defer sc.s.wg.Done()
	t0 := time.Now()
	for {
		sc.mu.Lock()
		r, idle := sc.e.step()
		sc.mu.Unlock()
		if idle {
			sc.publish()
			select {
			case <-sc.kick:
			case <-sc.s.stop:
				return
			}
			t0, sc.vt = time.Now(), 0
			sc.genSince, sc.inSince = 0, 0
			continue
		}
		sc.vt += r.dur
		// sleep to the step's virtual deadline: late wake-ups are caught up
		// on the next steps instead of slowing the model down
		d := time.Until(t0.Add(time.Duration(float64(sc.vt) / sc.s.opts.Speed)))
		sc.mu.Lock()
		sc.lag = time.Duration(float64(max(-d, 0)) * sc.s.opts.Speed)
		sc.maxLag = max(sc.maxLag, sc.lag)
		sc.decoded += int64(r.decoded + r.newSeqs)
		sc.mu.Unlock()
		if d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-sc.s.stop:
				t.Stop()
				return
			}
		}
		sc.account(r)
		// wake only the clients whose next piece is ready: a wake-up per
		// request per decode step cost the sim more CPU than the model
		sc.mu.Lock()
		for _, q := range r.changed {
			if q.out < q.need && !q.finished {
				continue
			}
			select {
			case q.wake <- struct{}{}:
			default:
			}
		}
		sc.mu.Unlock()
	}
}

// account updates the gauges and writes the lines SGLang writes for the
// pass: every prefill batch, every 40th decode step, every retraction.
func (sc *scheduler) account(r stepResult) {
	running, queued, used := sc.publish()
	s := sc.s
	sc.mu.Lock()
	usage := float64(used) / float64(sc.e.maxTotal)
	sc.mu.Unlock()
	if r.retracted > 0 {
		sc.mu.Lock()
		ratio := sc.e.ratio
		sc.mu.Unlock()
		s.mu.Lock()
		s.counts.retracted += float64(r.retracted)
		s.lastRetract = r.retracted
		s.mu.Unlock()
		// Scheduler.update_running_batch
		s.logf(" TP0", "KV cache pool is full. Retract requests. #retracted_reqs: %d, #new_token_ratio: %.4f -> %.4f", r.retracted, r.ratioFrom, ratio)
	}
	if r.prefill {
		sc.inTok += r.newTokens
		gap := (sc.vt - sc.inSince).Seconds()
		sc.inSince = sc.vt
		in := 0.0
		if gap > 0 {
			in = float64(sc.inTok) / gap
		}
		sc.inTok = 0
		if s.isReady() {
			s.prefillLine(r.newSeqs, r.newTokens, usage, running-r.newSeqs, queued, in)
		}
		return
	}
	sc.genTok += r.decoded
	sc.decodeSteps++
	if sc.decodeSteps < decodeLogEvery {
		return
	}
	if gap := (sc.vt - sc.genSince).Seconds(); gap > 0 {
		sc.mu.Lock()
		sc.gen = float64(sc.genTok) / gap
		sc.mu.Unlock()
	}
	sc.decodeSteps, sc.genTok, sc.genSince = 0, 0, sc.vt
	if s.isReady() {
		s.decodeLines(running, used, usage, sc.gen, queued)
	}
}

// publish copies the engine's state to the server's gauges.
func (sc *scheduler) publish() (running, queued, used int) {
	sc.mu.Lock()
	running, queued, used = len(sc.e.running), len(sc.e.waiting), sc.e.used
	sc.mu.Unlock()
	sc.s.mu.Lock()
	sc.s.running, sc.s.queued, sc.s.used = running, queued, used
	sc.s.mu.Unlock()
	return running, queued, used
}

// genThroughput is the last Decode batch line's figure (0 when idle).
func (sc *scheduler) genThroughput() float64 {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.e.running) == 0 {
		return 0
	}
	return sc.gen
}

// Resize changes the load model's KV pool and max running requests at once
// (a server restarted with less memory, or sharing its GPUs): requests
// beyond the new pool are retracted by the next decode step, as
// retract_decode does. The gauges report the new max_total_num_tokens.
func (s *Server) Resize(maxTotal, maxRunning int) {
	s.mu.Lock()
	s.opts.MaxTotal, s.opts.Capacity = maxTotal, maxRunning
	s.mu.Unlock()
	if s.sched == nil {
		return
	}
	s.sched.mu.Lock()
	s.sched.e.maxTotal, s.sched.e.maxRunning = maxTotal, maxRunning
	s.sched.mu.Unlock()
	s.sched.poke()
}
