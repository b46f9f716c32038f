package worker

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The meter: what a run on a category generated, wasted and drew.
//
// | figure | read how | when |
// | --- | --- | --- |
// | the server's generated tokens | /metrics' generation-token counter (parse.CounterSpan: a lower read is a server restart) | the category's start, every PowerEvery, its end |
// | the GPUs' power | nvidia-smi --query-gpu=parse.PowerQuery (parse.PowerIntegrator: trapezoids; a gap over MaxGapSamples periods breaks it) | the same |
// | kept, truncated, retried, aborted tokens | the records written, and each attempt's streamed tokens (Completion.Streamed) | as they land |
//
// The tally goes to the category's runs.jsonl (parse.RunTally) every
// TallyEvery and when the run leaves the category: every view reads it
// there. A restart is a new run with its own integral: the time the
// worker was down is not integrated, so it is a break, never a spike.

// TallyEvery is how often a run's tally is written before its end (a
// SIGKILL loses at most this much).
var TallyEvery = 2 * time.Minute

// MaxGapSamples: an interval longer than this many sample periods (the
// worker stalled, the host slept, nvidia-smi hung) is not integrated.
const MaxGapSamples = 3

// maxSMIOutput bounds what one nvidia-smi read keeps (a line a GPU).
const maxSMIOutput = 64 << 10

// meter is one catRun's measure; its fields are the run loop's and the
// meter loop's in turn (the loop ends before finish reads them).
type meter struct {
	every   time.Duration
	smi     string // nvidia-smi's path; "" when the host has none
	gen     parse.CounterSpan
	logGen  parse.CounterSpan // without a counter: the server log's throughput integrated
	logLn   [2]int            // its lines that added tokens, at the first read and now
	power   parse.PowerIntegrator
	powered bool // a sample was read
	smiErr  string
	lastTal time.Time
}

func (w *Worker) newMeter() *meter {
	m := &meter{every: w.cfg.PowerEvery, lastTal: time.Now()} // the first checkpoint a TallyEvery in
	if m.every == 0 {
		m.every = DefaultPowerEvery
	}
	m.power.MaxGap = MaxGapSamples * m.every
	if m.every > 0 {
		m.smi, _ = exec.LookPath("nvidia-smi")
	}
	return m
}

// account adds what an answer's failed attempts wasted.
func (r *catRun) account(res outcome) {
	if res.retried == 0 && res.aborted == 0 {
		return
	}
	r.mu.Lock()
	r.led.Retried += res.retried
	r.led.Aborted += res.aborted
	r.mu.Unlock()
}

// keptLocked counts a record written (r.mu held).
func (r *catRun) keptLocked(comp Completion) {
	r.led.Kept += int64(comp.CompletionTokens)
	if comp.FinishReason == "length" {
		r.led.Truncated += int64(comp.CompletionTokens)
	}
	if comp.TokensUnknown {
		r.led.KeptUnknown++
	}
}

// meterLoop reads the counter and the power every period until ctx ends,
// and writes the tally every TallyEvery.
func (r *catRun) meterLoop(ctx context.Context) {
	m := r.meter
	if m.every < 0 {
		return
	}
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.measure(context.WithoutCancel(ctx)) // a read under way ends whole at the stop: not an error, no break
		if time.Since(m.lastTal) >= TallyEvery {
			r.writeTally(false)
		}
	}
}

// measure takes one read of the counter and of the power.
func (r *catRun) measure(ctx context.Context) {
	m := r.meter
	if m.every < 0 {
		return
	}
	if v, ok := r.w.genCounter(ctx); ok {
		m.gen.Read(v)
	} else if !m.gen.Started() && r.w.srvLog != nil {
		if v, n, ok := r.w.srvLog.generated(time.Now()); ok {
			if !m.logGen.Started() {
				m.logLn[0] = n
			}
			m.logGen.Read(v)
			m.logLn[1] = n
		}
	}
	if m.smi == "" {
		return
	}
	at, watts, gpus, err := readPower(ctx, m.smi)
	if err != nil {
		m.power.Break() // an unread sample is a gap, never a zero
		if m.smiErr != err.Error() {
			m.smiErr = err.Error()
			r.w.logf("WARNING: %s: GPU power not read: %s", r.c.Name, parse.SanitizeString(m.smiErr))
		}
		return
	}
	r.mu.Lock()
	busy := r.inflight > 0
	r.mu.Unlock()
	if at.IsZero() { // a timestamp nvidia-smi did not give: the answer's time
		at = time.Now()
	}
	m.power.Add(parse.PowerSample{At: at, Watts: watts, GPUs: gpus, Busy: busy})
	m.powered = true
}

// SettleFor is how long a run's last read of the counter waits for it to
// stop moving: the server counts a request when it finishes, about when
// its last chunk goes out, and an aborted one when the abort comes back
// from the scheduler, after the worker let go of it.
var SettleFor = 2 * time.Second

// settleCounter waits, up to SettleFor, until two reads 100 ms apart
// agree and the counter has grown by the tokens the cut requests
// streamed. What the server made for them after the worker let go is in
// the rest, unexplained; a server busy with other clients takes the 2 s.
func (r *catRun) settleCounter(ctx context.Context) {
	r.mu.Lock()
	aborted := float64(r.led.Aborted)
	r.mu.Unlock()
	if r.meter.every < 0 || !r.meter.gen.Started() {
		return
	}
	first, ok := r.w.genCounter(ctx)
	for last, deadline := first, time.Now().Add(SettleFor); ok && time.Now().Before(deadline); {
		if sleepCtx(ctx, 100*time.Millisecond) != nil {
			return
		}
		v, ok := r.w.genCounter(ctx)
		if !ok || v < last || (v == last && v-first >= aborted) { // gone, restarted, or still
			return
		}
		last = v
	}
}

// genCounter reads the server's generation-token counter (SGLang's
// sglang:generation_tokens_total, summed over its ranks; vLLM's).
func (w *Worker) genCounter(ctx context.Context) (float64, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	text, err := w.client.getText(ctx, "/metrics")
	if err != nil {
		return 0, false
	}
	m, err := parse.ParseMetrics(strings.NewReader(text))
	if err != nil || !m.GenTokens.OK {
		return 0, false
	}
	return m.GenTokens.V, true
}

// readPower runs nvidia-smi once, its output bounded.
func readPower(ctx context.Context, smi string) (time.Time, float64, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, smi, "--query-gpu="+parse.PowerQuery, "--format=csv,noheader,nounits")
	var out capped
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return time.Time{}, 0, 0, errWithOutput(err, out.String())
	}
	return parse.ParsePower(out.String(), time.Local)
}

func errWithOutput(err error, out string) error {
	if out = strings.TrimSpace(out); out != "" {
		return &smiError{err: err, out: out}
	}
	return err
}

type smiError struct {
	err error
	out string
}

func (e *smiError) Error() string { return e.err.Error() + ": " + shorten(e.out, 200) }

// capped keeps the first maxSMIOutput bytes written to it.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxSMIOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// tally is the run's figures on the category so far.
func (r *catRun) tally(final bool) parse.RunTally {
	m := r.meter
	r.mu.Lock()
	l, written := r.led, int64(r.written)
	r.mu.Unlock()
	switch {
	case m.gen.Started():
		g := int64(m.gen.Increase + 0.5)
		l.Generated, l.GeneratedFrom, l.Counted, l.CounterResets = &g, parse.GenFromCounter, l.Streamed(), m.gen.Resets
	case m.logGen.Started() && m.logLn[1] > m.logLn[0]: // decode lines were logged during the run
		g := int64(m.logGen.Increase + 0.5)
		l.Generated, l.GeneratedFrom, l.Counted = &g, parse.GenFromLog, l.Streamed()
	default:
		l.Uncounted = 1
	}
	t := parse.RunTally{At: stamp(time.Now()), Final: final, Ledger: l}
	if m.powered {
		e := m.power.E
		e.Records = written
		t.Energy = &e
	}
	return t
}

// writeTally appends the tally to the category's runs.jsonl, never into a
// root this worker no longer holds.
func (r *catRun) writeTally(final bool) {
	r.meter.lastTal = time.Now()
	if r.w.lock != nil && r.w.lock.Held() != nil {
		return
	}
	t := r.tally(final)
	if _, err := appendRun(r.c.Dir, parse.RunLine{Run: r.w.runID, PID: os.Getpid(), Tally: &t}); err != nil {
		r.w.logf("%s: runs.jsonl: the run's tally: %s", r.c.Name, parse.SanitizeString(err.Error()))
	}
}
