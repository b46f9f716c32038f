package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(t *testing.T, o Options) *Server {
	t.Helper()
	s := New(o)
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := http.Get(s.URL() + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return s
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("sim not ready")
	return nil
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	r, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var m map[string]any
	data, _ := io.ReadAll(r.Body)
	json.Unmarshal(data, &m)
	return r.StatusCode, m
}

func TestEndpointsAnswerLikeSGLang(t *testing.T) {
	s := start(t, Options{Speed: 100})
	code, m := post(t, s.URL()+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":100000}`)
	if code != 200 {
		t.Fatalf("chat %d %v", code, m)
	}
	msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	usage := m["usage"].(map[string]any)
	if msg["content"] == "" || msg["reasoning_content"] == nil || usage["completion_tokens"].(float64) < 2000 {
		t.Errorf("LONG chat answer: %v", m) // max_tokens above LongAbove: ~3800 tokens
	}
	code, m = post(t, s.URL()+"/generate", `{"text":"hi","sampling_params":{"max_new_tokens":50}}`)
	meta := m["meta_info"].(map[string]any)
	if code != 200 || meta["completion_tokens"].(float64) != 50 || meta["finish_reason"].(map[string]any)["type"] != "length" {
		t.Errorf("generate: %d %v", code, m)
	}
	if code, _ := post(t, s.URL()+"/v1/chat/completions", `{"max_tokens":5}`); code != 400 {
		t.Errorf("missing messages: %d", code)
	}
	for _, p := range []string{"/get_server_info", "/server_info", "/get_model_info", "/model_info", "/v1/models", "/health_generate"} {
		r, err := http.Get(s.URL() + p)
		if err != nil || r.StatusCode != 200 {
			t.Errorf("GET %s: %v %v", p, err, r)
		}
		r.Body.Close()
	}
	r, _ := http.Get(s.URL() + "/metrics")
	met, err := parse.ParseMetrics(r.Body)
	r.Body.Close()
	if err != nil || met.Dialect != parse.DialectSGLang || met.Requests.V != 2 || met.GenTokens.V < 2000 {
		t.Errorf("metrics %v %+v", err, met)
	}
}

func TestCapacityQueues(t *testing.T) {
	// slow decoding (100 tokens at 0.1 tok/s × 20: 50 s), so the six stay
	// where they are while the test looks; cancelled at the end, and a
	// disconnect aborts at once
	s := start(t, Options{Speed: 20, TokPerSec: 0.1, Capacity: 2, DisconnectHold: -1})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "POST", s.URL()+"/v1/chat/completions", strings.NewReader(`{"messages":[1],"max_tokens":100}`))
			if r, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
			}
		}()
	}
	var met parse.ServerMetrics
	until(t, "six requests admitted or queued", func() bool {
		r, err := http.Get(s.URL() + "/metrics")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		met, _ = parse.ParseMetrics(r.Body)
		return met.RunningReqs.V+met.QueueReqs.V == 6
	})
	if met.RunningReqs.V != 2 || met.QueueReqs.V != 4 {
		t.Errorf("running %v queued %v, want 2 and 4", met.RunningReqs.V, met.QueueReqs.V)
	}
}

// Every format the sim writes is one the parser reads.
func TestLogFormatsParse(t *testing.T) {
	for _, f := range []string{"2026", "v0.5", "v0.4", "v0.3", "dp"} {
		t.Run(f, func(t *testing.T) {
			var log logBuf
			s := start(t, Options{Speed: 20, Format: f, Log: &log, LogInterval: 100 * time.Millisecond * 20})
			var wg sync.WaitGroup
			for i := 0; i < 4; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					post(t, s.URL()+"/v1/chat/completions", `{"messages":[1],"max_tokens":400}`)
				}()
			}
			wg.Wait()
			s.Crash(time.Hour)
			var r parse.ServerLog
			kinds := map[parse.ServerKind]int{}
			sc := bufio.NewScanner(strings.NewReader(log.String()))
			emit := func(e parse.ServerEvent) {
				kinds[e.Kind]++
				if e.Kind == parse.SBatch && e.Batch.Phase == parse.Decode && (!e.Batch.RunningReqs.OK || !e.Batch.GenThroughput.OK) {
					t.Errorf("decode line without figures: %q", e.Msg)
				}
			}
			for sc.Scan() {
				r.Feed(sc.Text(), emit)
			}
			r.Flush(emit)
			if kinds[parse.SReady] != 1 || kinds[parse.SBatch] < 2 || kinds[parse.SCrash] != 1 || kinds[parse.SSigquit] != 1 || kinds[parse.SStartup] < 5 {
				t.Errorf("kinds %v\n%s", kinds, log.String())
			}
		})
	}
}

func TestFaults(t *testing.T) {
	s := start(t, Options{Instant: true})
	s.SetFaults(Faults{ErrorRate: 1})
	if code, _ := post(t, s.URL()+"/v1/chat/completions", `{"messages":[1]}`); code != 503 {
		t.Errorf("error rate 1: %d", code)
	}
	s.SetFaults(Faults{ResetRate: 1})
	_, err := http.Post(s.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[1]}`))
	if err == nil {
		t.Error("reset rate 1: no error")
	}
	s.SetFaults(Faults{StallMatch: "of B2"})
	c := http.Client{Timeout: 300 * time.Millisecond}
	if _, err := c.Post(s.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"rid":"3f2a","messages":[{"role":"user","content":"question 7 of B2"}]}`)); err == nil {
		t.Error("stalled prompt answered")
	}
	other := http.Client{Timeout: time.Minute} // the answer comes; the bound is for a hang only
	if r, err := other.Post(s.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"rid":"9c1d","messages":[{"role":"user","content":"question 7 of B1"}]}`)); err != nil || r.StatusCode != 200 {
		t.Errorf("other prompt: %v", err)
	}
	s.Down(300 * time.Millisecond)
	if _, err := http.Get(s.URL() + "/health"); err == nil {
		t.Error("down server answered")
	}
	until(t, "the server back after Down(300ms)", func() bool {
		r, err := http.Get(s.URL() + "/health")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == 200
	})
}

// Requests held by StallMatch are released when the fault is cleared (or
// changed to no longer match them): they are decoded and answered in full,
// so a worker restarted onto a stall that is then cleared flows at once.
func TestClearingAStallReleasesHeldRequests(t *testing.T) {
	s := start(t, Options{Speed: 100})
	s.SetFaults(Faults{StallMatch: "of B3"})
	type answer struct {
		code int
		m    map[string]any
	}
	answers := make(chan answer, 3)
	for i, body := range []string{
		`{"rid":"a1","messages":[{"role":"user","content":"question 1 of B3"}],"max_tokens":50}`,
		`{"rid":"a2","messages":[{"role":"user","content":"question 2 of B3"}],"max_tokens":50,"stream":true}`,
		`{"rid":"a3","messages":[{"role":"user","content":"question 3 of B3"}],"max_tokens":50}`,
	} {
		go func() {
			r, err := http.Post(s.URL()+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				answers <- answer{code: -1}
				return
			}
			defer r.Body.Close()
			data, _ := io.ReadAll(r.Body)
			var m map[string]any
			if i != 1 {
				json.Unmarshal(data, &m)
			} else if strings.Contains(string(data), `"finish_reason":"stop"`) || strings.Contains(string(data), `"finish_reason":"length"`) {
				m = map[string]any{"choices": []any{map[string]any{"finish_reason": "stop"}}}
			}
			answers <- answer{r.StatusCode, m}
		}()
	}
	until(t, "three held requests", func() bool { return len(s.LiveRIDs()) == 3 })
	select {
	case a := <-answers:
		t.Fatalf("a stalled request was answered: %+v", a)
	case <-time.After(200 * time.Millisecond):
	}
	s.SetFaults(Faults{StallMatch: "of B9"}) // another fault: these no longer match
	for i := 0; i < 3; i++ {
		select {
		case a := <-answers:
			ch, _ := a.m["choices"].([]any)
			if a.code != 200 || len(ch) != 1 {
				t.Fatalf("released request: %d %v", a.code, a.m)
			}
			if fr := ch[0].(map[string]any)["finish_reason"]; fr != "stop" && fr != "length" {
				t.Errorf("released request finished %v, want a whole completion", fr)
			}
		case <-time.After(30 * time.Second): // generous: a loaded machine
			t.Fatal("a stalled request is still held after the fault was cleared")
		}
	}
}
