package sim

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// getMetrics is the server's /metrics, parsed.
func getMetrics(t *testing.T, s *Server) parse.ServerMetrics {
	t.Helper()
	r, err := http.Get(s.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	m, err := parse.ParseMetrics(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLoadModelRetractsAndAnswersEveryone: more requests than a small pool
// holds. The scheduler admits what the pool allows, retracts when decode
// runs out of KV (the log line SGLang prints, the counter in /metrics),
// computes the retracted ones again, and every request still gets its whole
// answer; the gauges agree with the log and end at zero.
func TestLoadModelRetractsAndAnswersEveryone(t *testing.T) {
	t.Parallel()
	var log logBuf
	s := start(t, Options{Load: true, Speed: 200, MaxTotal: 24000, Capacity: 48, ShortMean: 2500, Log: &log})
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"max_tokens":4000}`, strings.Repeat("word ", 200+i))
			code, m := post(t, s.URL()+"/v1/chat/completions", body)
			if code != 200 {
				errs <- fmt.Errorf("status %d: %v", code, m)
				return
			}
			ch := m["choices"].([]any)[0].(map[string]any)
			if ch["finish_reason"] != "stop" || m["usage"].(map[string]any)["completion_tokens"].(float64) < 1400 {
				errs <- fmt.Errorf("answer cut short: %v %v", ch["finish_reason"], m["usage"])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := getMetrics(t, s)
	if !m.Retracted.OK || m.Retracted.V == 0 {
		t.Errorf("no retraction counted in /metrics: %+v", m.Retracted)
	}
	if m.RunningReqs.V != 0 || m.QueueReqs.V != 0 || m.UsedTokens.V != 0 || m.Requests.V != n {
		t.Errorf("after the last answer: running %v queued %v used %v requests %v", m.RunningReqs.V, m.QueueReqs.V, m.UsedTokens.V, m.Requests.V)
	}
	var retracts, decodes int
	sc := bufio.NewScanner(strings.NewReader(log.String()))
	for sc.Scan() {
		ev := parse.ParseServerLine(sc.Text())
		switch ev.Kind {
		case parse.SRetract:
			retracts++
		case parse.SBatch:
			b := ev.Batch
			if b.RunningReqs.V > 48 || b.TokenUsage.V > 1 {
				t.Errorf("a batch line past the limits: %s", sc.Text())
			}
			if b.Phase == parse.Decode {
				decodes++
			}
		}
	}
	if retracts == 0 || decodes == 0 {
		t.Errorf("log: %d retract lines, %d decode lines:\n%s", retracts, decodes, log.String())
	}
}
