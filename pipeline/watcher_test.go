package pipeline

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// runningRoot has B1 (done) and B2 (in progress) with a live fake worker on B2.
func runningRoot(t *testing.T, c *clock) (root string, pid int) {
	root = t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 20))
	write(t, filepath.Join(root, "prepared", "B1", "raw_responses.jsonl"), records("B1", 0, 20))
	write(t, filepath.Join(root, "prepared", "B2", "prompts.jsonl"), prompts("B2", 1000))
	write(t, filepath.Join(root, "prepared", "B2", "raw_responses.jsonl"), records("B2", 0, 100))
	pid = fakeWorker(t, root)
	writeWorkerJSON(t, root, parse.WorkerState{PID: pid, State: parse.WorkerRunning, Category: "B2", UpdatedAt: c.now(),
		Categories: []parse.CategoryState{
			{Name: "B1", Class: "SHORT", Done: 20, Target: 20, State: parse.CatSkipped},
			{Name: "B2", Class: "LONG", Done: 100, Target: 1000, State: parse.CatRunning, CompletionTokens: 20000},
		}})
	now := time.Now()
	must(t, os.Chtimes(filepath.Join(root, "prepared", "B2", "raw_responses.jsonl"), now, now))
	return root, pid
}

func TestStallNeedsRealGrowthToClear(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, pid := runningRoot(t, c)
	w := localWatcher(t, root, c, Options{StallAfter: 10 * time.Minute})
	raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")

	s := poll(w)
	if s.Worker.State != "running" || s.Worker.PID != pid || catByName(t, s, "B2").State != snapshot.StateRunning || catByName(t, s, "B1").State != snapshot.StateDone {
		t.Fatalf("start: worker %+v cats %+v", s.Worker, s.Categories)
	}
	for i := 0; i < 5; i++ { // a minute of steady progress: 30 lines a minute
		c.advance(time.Minute)
		appendTo(t, raw, records("B2", 100+30*i, 30))
		// the worker says its rate (the witness every view has)
		writeWorkerJSON(t, root, parse.WorkerState{PID: pid, State: parse.WorkerRunning, Category: "B2", UpdatedAt: c.now(),
			Categories: []parse.CategoryState{{Name: "B2", Class: "LONG", Done: 130 + 30*i, Target: 1000, State: parse.CatRunning, Rate: 30}}})
		s = poll(w)
	}
	b2 := catByName(t, s, "B2")
	if b2.State != snapshot.StateRunning || b2.RatePerMin < 10 || b2.ETASeconds == nil || s.ETASeconds == nil {
		t.Fatalf("steady: %+v eta %v", b2, s.ETASeconds)
	}
	// the worker log keeps talking, but no records arrive: that is not progress
	wlog := filepath.Join(root, "logs", "inference_all.log")
	for i := 0; i < 11; i++ {
		c.advance(time.Minute)
		appendTo(t, wlog, "250/1000 (0 err) 0.5 req/s avg_comp=200tok ETA=25m\n")
		s = poll(w)
	}
	b2 = catByName(t, s, "B2")
	if b2.State != snapshot.StateStalled {
		t.Fatalf("after 11 quiet minutes: %s", b2.State)
	}
	c.advance(time.Minute)
	s = poll(w)
	stalls := 0
	for _, e := range s.Events {
		if e.Kind == "stall_start" {
			stalls++
		}
	}
	if stalls != 1 || catByName(t, s, "B2").State != snapshot.StateStalled {
		t.Fatalf("want one stall_start and still stalled: %+v", s.Events)
	}
	appendTo(t, raw, records("B2", 250, 1))
	c.advance(time.Second)
	s = poll(w)
	if catByName(t, s, "B2").State != snapshot.StateRunning || s.Events[len(s.Events)-1].Kind != "stall_end" {
		t.Fatalf("growth did not clear the stall: %+v", s.Events)
	}
}

func TestOneShotStatusSeesStallFromMtime(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, _ := runningRoot(t, c)
	old := time.Now().Add(-20 * time.Minute)
	must(t, os.Chtimes(filepath.Join(root, "prepared", "B2", "raw_responses.jsonl"), old, old))
	s := poll(localWatcher(t, root, c, Options{}))
	b2 := catByName(t, s, "B2")
	if b2.State != snapshot.StateStalled || b2.LastGrowth == nil {
		t.Fatalf("one-shot: %+v", b2)
	}
}

func TestWorkerStates(t *testing.T) {
	c := newClock()
	c.t = time.Now()
	root, _ := runningRoot(t, c)
	st := parse.WorkerState{PID: 999999, State: parse.WorkerRunning, Category: "B2", UpdatedAt: c.now()}
	writeWorkerJSON(t, root, st) // a pid that does not exist: the job is unfinished, so the worker died
	if s := poll(localWatcher(t, root, c, Options{})); s.Worker.State != snapshot.WorkerDied || catByName(t, s, "B2").State != snapshot.StateDied || s.ETASeconds != nil {
		t.Fatalf("dead worker: %+v %+v", s.Worker, s.Categories)
	}
	st.State = parse.WorkerStopped
	writeWorkerJSON(t, root, st)
	if s := poll(localWatcher(t, root, c, Options{})); s.Worker.State != "stopped" {
		t.Fatalf("stopped: %+v", s.Worker)
	}
	// a live pid that is not a worker (reused) is not the worker
	st.PID = os.Getpid()
	st.State = parse.WorkerRunning
	writeWorkerJSON(t, root, st)
	if s := poll(localWatcher(t, root, c, Options{})); s.Worker.State != snapshot.WorkerDied {
		t.Fatalf("reused pid: %+v", s.Worker)
	}
}

// downHost answers until it is switched off, then says ErrDisconnected.
type downHost struct {
	remote.Host
	down bool
}

func (d *downHost) Stat(ctx context.Context, p string) (remote.FileInfo, error) {
	if d.down {
		return remote.FileInfo{}, remote.ErrDisconnected
	}
	return d.Host.Stat(ctx, p)
}

func (d *downHost) Glob(ctx context.Context, p string) ([]string, error) {
	if d.down {
		return nil, remote.ErrDisconnected
	}
	return d.Host.Glob(ctx, p)
}

func TestLinkDownIsUnknownNeverStalled(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, _ := runningRoot(t, c)
	h := &downHost{Host: remote.Local{}}
	w := NewWatcher(h, Options{Root: root, Now: c.now, ServerURL: closedURL(t)}, nil)
	poll(w)
	h.down = true
	c.advance(30 * time.Minute)
	s := poll(w)
	for _, cat := range s.Categories {
		if cat.State != snapshot.StateUnknown || cat.ETASeconds != nil {
			t.Fatalf("down: %+v", cat)
		}
	}
	if catByName(t, s, "B2").Done != 100 || s.ETASeconds != nil || len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0], "no contact") {
		t.Fatalf("stale snapshot: %+v", s)
	}
	if th := s.Server.Throughput; !math.IsNaN(th[len(th)-1]) {
		t.Fatalf("a poll without data must be a gap in the throughput history: %v", th[len(th)-5:])
	}
}

func TestServerFromLogSumsDPRanks(t *testing.T) {
	t.Parallel()
	c := newClock()
	root := t.TempDir()
	write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 1))
	write(t, filepath.Join(root, "logs", "sglang_inference.log"), `[2026-11-29 02:59:00] The server is fired up and ready to roll!
[2026-11-29 02:59:50 DP0 TP0] Decode batch, #running-req: 10, #token: 100, token usage: 0.30, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 1
[2026-11-29 02:59:58 DP0 TP0] Decode batch, #running-req: 40, #token: 100, token usage: 0.50, cuda graph: True, gen throughput (token/s): 400.00, #queue-req: 2
[2026-11-29 02:59:59 DP1 TP1] Decode batch, #running-req: 30, #token: 100, token usage: 0.90, cuda graph: True, gen throughput (token/s): 300.00, #queue-req: 3
[2026-11-29 02:59:59] KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.9998 -> 1.0000
`)
	now := time.Now()
	must(t, os.Chtimes(filepath.Join(root, "logs", "sglang_inference.log"), now, now))
	c.t = now
	s := poll(localWatcher(t, root, c, Options{}))
	sv := s.Server
	if sv.Source != "log" || sv.State != snapshot.ServerBusy || sv.RunningReqs != 70 || sv.QueueReqs != 5 || sv.GenThroughput != 700 || sv.TokenUsage != 0.9 || sv.Retractions != 2 {
		t.Fatalf("server %+v", sv)
	}
	appendTo(t, filepath.Join(root, "logs", "sglang_inference.log"), "[2026-11-29 03:00:05 DP0 TP0] Scheduler hit an exception: Traceback (most recent call last):\n  File \"x.py\", line 1\ntorch.OutOfMemoryError: CUDA out of memory.\n")
	w := localWatcher(t, root, c, Options{})
	poll(w)
	s = poll(w) // the traceback completes once the log is quiet for a poll
	if s.Server.State != "crashed" || !strings.Contains(s.Server.LastCrash, "CUDA out of memory") || s.Server.RunningReqs != 0 {
		t.Fatalf("crash %+v", s.Server)
	}
}

func TestCrossChecks(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, _ := runningRoot(t, c)
	write(t, filepath.Join(root, "logs", "inference_all.log"), "Processing: B2 (LONG)\nB2: 1000 prompts\n5000/10000 (0 err) 1.0 req/s avg_comp=200tok ETA=1h\n")
	runs := filepath.Join(root, "prepared", "B2", "runs.jsonl")
	write(t, runs, `{"run":"a","server_info":{"info":{"kv_cache_dtype":"auto","model_path":"/m"},"config_key":"aaa"}}`+"\n"+
		`{"run":"b","server_info":{"info":{"kv_cache_dtype":"fp8_e5m2","model_path":"/m"},"config_key":"bbb"}}`+"\n")
	st := readJSON(t, root)
	st.UpdatedAt = c.now().Add(-2 * time.Minute)
	writeWorkerJSON(t, root, st)
	s := poll(localWatcher(t, root, c, Options{}))
	all := strings.Join(s.Warnings, "\n")
	for _, want := range []string{"the worker log says 5000/10000 but raw_responses.jsonl has 100 records", "worker.json is 2m0s old while pid", "records from 2 server configurations: kv_cache_dtype=auto", "kv_cache_dtype=fp8_e5m2"} {
		if !strings.Contains(all, want) {
			t.Errorf("missing warning %q in:\n%s", want, all)
		}
	}
	if len(catByName(t, s, "B2").Warnings) != 2 {
		t.Errorf("row warnings %v", catByName(t, s, "B2").Warnings)
	}
}

func readJSON(t *testing.T, root string) parse.WorkerState {
	data, err := os.ReadFile(filepath.Join(root, "run", "worker.json"))
	must(t, err)
	st, err := parse.ParseWorkerState(data)
	must(t, err)
	return st
}

// linkedHost reports a connection state, as the SSH host does.
type linkedHost struct {
	remote.Host
	st remote.ConnState
}

func (l *linkedHost) State() remote.ConnState { return l.st }

func TestTimelineRecordsDisconnectAndReconnect(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, _ := runningRoot(t, c)
	h := &linkedHost{Host: remote.Local{}, st: remote.ConnState{Phase: remote.Connected}}
	w := NewWatcher(h, Options{Root: root, Now: c.now, ServerURL: closedURL(t)}, nil)
	poll(w)
	h.st = remote.ConnState{Phase: remote.Reconnecting, Err: "no answer to keepalives for 45s", Drops: 1}
	poll(w)
	h.st = remote.ConnState{Phase: remote.Connected, Drops: 3} // two more drops came and went between polls
	s := poll(w)
	var kinds []string
	var first snapshot.Event
	for _, e := range s.Events {
		if e.Kind == "category_done" || e.Kind == snapshot.EventGateBelow {
			continue // B1 was done before we looked: recorded once, at its file's time; B2's records carry no answer
		}
		if first.Kind == "" {
			first = e
		}
		kinds = append(kinds, e.Kind)
	}
	if got := strings.Join(kinds, ","); !strings.Contains(got, "disconnect,reconnect,disconnect,reconnect,disconnect,reconnect") || !strings.Contains(first.Text, "keepalives") {
		t.Fatalf("events %v", s.Events)
	}
}

// A poll whose link dropped during its batch is stale, but the log lines
// its tails read are folded all the same: skipped, they would be lost, as
// the tails have moved past them.
func TestStalePollKeepsTheLinesItRead(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, _ := runningRoot(t, c)
	log := filepath.Join(root, parse.WorkerLogPath)
	write(t, log, "one\ntwo\n")
	h := &linkedHost{Host: remote.Local{}, st: remote.ConnState{Phase: remote.Connected}}
	w := NewWatcher(h, Options{Root: root, Now: c.now, ServerURL: closedURL(t)}, nil)
	poll(w)
	appendTo(t, log, "three\nfour\n")
	h.st = remote.ConnState{Phase: remote.Reconnecting, Err: "no answer to keepalives", Drops: 1}
	if s := poll(w); s.Worker.State != snapshot.WorkerUnknown {
		t.Fatalf("a poll with the link down: worker %s", s.Worker.State)
	}
	appendTo(t, log, "five\n")
	h.st = remote.ConnState{Phase: remote.Connected, Drops: 1}
	poll(w)
	if got := strings.Join(w.WorkerLog.Lines(), ","); got != "one,two,three,four,five" {
		t.Fatalf("worker log lines %q", got)
	}
}

// backMidPoll fails its reads with ErrDisconnected while down; the first
// look at its state after one failed says the link is back (a new
// session): the reconnect finished while the poll's reads were in flight.
type backMidPoll struct {
	remote.Host
	mu           sync.Mutex
	st           remote.ConnState
	down, failed bool
}

func (b *backMidPoll) State() remote.ConnState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down && b.failed {
		b.down = false
		b.st = remote.ConnState{Phase: remote.Connected, Drops: b.st.Drops, Sessions: b.st.Sessions + 1}
	}
	return b.st
}

func (b *backMidPoll) lose() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down, b.failed = true, false
	b.st = remote.ConnState{Phase: remote.Reconnecting, Drops: b.st.Drops + 1, Sessions: b.st.Sessions}
}

// lost: this read was sent on the lost connection.
func (b *backMidPoll) lost() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		b.failed = true
	}
	return b.down
}

func (b *backMidPoll) Stat(ctx context.Context, p string) (remote.FileInfo, error) {
	if b.lost() {
		return remote.FileInfo{}, remote.ErrDisconnected
	}
	return b.Host.Stat(ctx, p)
}

func (b *backMidPoll) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	if b.lost() {
		return nil, remote.ErrDisconnected
	}
	return b.Host.ReadAt(ctx, p, off, n)
}

func (b *backMidPoll) Glob(ctx context.Context, pat string) ([]string, error) {
	if b.lost() {
		return nil, remote.ErrDisconnected
	}
	return b.Host.Glob(ctx, pat)
}

// A link back while a poll's reads failed on its loss gives that poll fresh
// figures, not a stale snapshot that calls itself connected (CI caught the
// wake doing this: the rows unknown under a "connected" header until the
// next poll).
func TestLinkBackDuringPollReadsAgain(t *testing.T) {
	t.Parallel()
	c := newClock()
	c.t = time.Now()
	root, _ := runningRoot(t, c)
	h := &backMidPoll{Host: remote.Local{}, st: remote.ConnState{Phase: remote.Connected, Sessions: 1}}
	w := NewWatcher(h, Options{Root: root, Now: c.now, ServerURL: closedURL(t)}, nil)
	if s := poll(w); s.Worker.State != snapshot.WorkerRunning {
		t.Fatalf("before: %+v", s.Worker)
	}
	h.lose()
	s := poll(w)
	if s.Connection.Stale() || s.Worker.State != snapshot.WorkerRunning || catByName(t, s, "B2").State == snapshot.StateUnknown {
		t.Fatalf("a poll with the link back: %+v %+v %+v", s.Connection, s.Worker, s.Categories)
	}
}
