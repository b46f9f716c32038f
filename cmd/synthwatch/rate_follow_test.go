package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"golang.org/x/crypto/ssh/knownhosts"
)

// rateWriter is a worker on B1 as the host shows it: a live process named
// "synthwatch worker --root ROOT", its worker.json kept fresh, and records
// appended in bursts of burst every every. It logs each burst's time.
type rateWriter struct {
	mu     sync.Mutex
	bursts []time.Time
	n      int
	stop   chan struct{}
	done   chan struct{}
}

func startRateWriter(t *testing.T, root string, every time.Duration, burst int) *rateWriter {
	t.Helper()
	proc := exec.Command("sh", "-c", "while :; do sleep 1; done", "synthwatch", "worker", "--root", root)
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	raw := filepath.Join(root, "prepared", "B1", "raw_responses.jsonl")
	f, err := os.OpenFile(raw, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w := &rateWriter{stop: make(chan struct{}), done: make(chan struct{})}
	started := time.Now()
	state := func() {
		st := parse.WorkerState{Schema: 1, PID: proc.Process.Pid, State: parse.WorkerRunning, Category: "B1", StartedAt: started,
			CategorySince: started, UpdatedAt: time.Now(),
			// a rate: the witness a first look has too (parse.WitnessedRate);
			// the follower shows its own measurement of the growth
			Categories: []parse.CategoryState{{Name: "B1", Class: "SHORT", Target: 20000, State: parse.CatRunning, Rate: 1}}}
		data, _ := json.Marshal(st)
		tmp := filepath.Join(root, "run", "worker.json.tmp")
		os.WriteFile(tmp, data, 0o644)
		os.Rename(tmp, filepath.Join(root, "run", "worker.json"))
	}
	os.MkdirAll(filepath.Join(root, "run"), 0o755)
	state()
	go func() {
		defer close(w.done)
		defer f.Close()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			var b strings.Builder
			w.mu.Lock()
			for i := 0; i < burst; i++ {
				fmt.Fprintf(&b, `{"id":%d,"category":"B1","completion_tokens":200,"finish_reason":"stop","content":"ok"}`+"\n", w.n)
				w.n++
			}
			w.mu.Unlock()
			f.WriteString(b.String())
			w.mu.Lock()
			w.bursts = append(w.bursts, time.Now())
			w.mu.Unlock()
			state()
		}
	}()
	t.Cleanup(w.halt)
	return w
}

func (w *rateWriter) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// writing says the writer has not yet made the bursts of 14 s at its
// pace (2m20s simulated).
func (w *rateWriter) writing(every time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.bursts) < int(14*time.Second/every)
}

// truth is the writer's real rate per minute: records after its first
// burst over the time from the first burst to the last, and when it last wrote.
func (w *rateWriter) truth(burst int) (perMin float64, last time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := len(w.bursts)
	if k < 2 {
		return 0, time.Time{}
	}
	return float64((k-1)*burst) / w.bursts[k-1].Sub(w.bursts[0]).Minutes(), w.bursts[k-1]
}

// fresh is the next snapshot read from the host: a loaded machine's slow
// poll has --follow print quiet lines meanwhile (stale, no figures), which
// say nothing of the rate.
func fresh(f *follower) snapshot.Snapshot {
	for {
		if s := f.next(30 * time.Second); !s.Connection.Stale() {
			return s
		}
	}
}

// TestFollowRateAndETAOfKnownWriters drives a writer with a known rate,
// steady and bursty, and reads `status --follow --json` over a real sshd.
// Time runs ten times fast: 2m20s of writing are 14 s (the rate needs its
// growths to span parse.RateMinSpan, 10 s of real time), stall_after
// (one minute) is 6 s, a burst of 50 every 20 s comes every 2 s. After the
// writing the rate and the ETA are within 20 % of the writer's own figures;
// every snapshot taken one stall_after after its last record shows rate 0,
// no ETA and stalled.
func TestFollowRateAndETAOfKnownWriters(t *testing.T) {
	testgate.E2E(t)
	s := sshdtest.Start(t)
	kh := filepath.Join(t.TempDir(), "kh")
	os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr())}, s.HostKey)+"\n"), 0o600)
	for _, c := range []struct {
		name  string
		every time.Duration
		burst int
	}{
		{"steady", 100 * time.Millisecond, 1},
		{"bursty", 2 * time.Second, 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "prepared", "B1")
			os.MkdirAll(dir, 0o755)
			var p strings.Builder
			for i := 0; i < 20000; i++ {
				fmt.Fprintf(&p, `{"id":%d,"messages":[{"role":"user","content":"q"}]}`+"\n", i)
			}
			os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
			os.WriteFile(filepath.Join(dir, "raw_responses.jsonl"), nil, 0o644)
			stallAfter := 6 * time.Second
			f := startFollower(t, "--poll", "200ms", "--stall-after", stallAfter.String(), "-i", s.KeyPath, "-o", "UserKnownHostsFile="+kh,
				"-o", "StrictHostKeyChecking=yes", "--root", root, s.User+"@"+s.Addr())
			f.next(60 * time.Second) // connected
			wr := startRateWriter(t, root, c.every, c.burst)
			// 2m20s of writing at ten times the pace, counted in the
			// writer's bursts (not our clock), however slowly the machine runs
			for wr.writing(c.every) {
				f.next(30 * time.Second)
			}
			snap := fresh(f) // a poll after the last counted burst
			truth, _ := wr.truth(c.burst)
			b1 := catOf(t, snap, "B1")
			rateErr := math.Abs(b1.RatePerMin-truth) / truth
			if b1.State != snapshot.StateRunning || rateErr > 0.2 {
				t.Fatalf("after the writing: %s at %.1f/min, the writer's %.1f/min (error %.0f%%)", b1.State, b1.RatePerMin, truth, rateErr*100)
			}
			truthETA := float64(b1.Target-b1.Done) / truth * 60
			if b1.ETASeconds == nil || math.Abs(*b1.ETASeconds-truthETA)/truthETA > 0.2 {
				t.Fatalf("ETA %v, the writer's %.0fs", b1.ETASeconds, truthETA)
			}
			t.Logf("%s: rate %.1f/min, writer %.1f/min (error %.1f%%); ETA %.0fs, writer's %.0fs",
				c.name, b1.RatePerMin, truth, rateErr*100, *b1.ETASeconds, truthETA)
			wr.halt()
			_, last := wr.truth(c.burst)
			judged := 0
			for judged < 5 {
				snap = fresh(f)
				if !snap.Time.After(last.Add(stallAfter + time.Second)) {
					continue // within one stall_after (and a poll) of the last record
				}
				judged++
				b1 = catOf(t, snap, "B1")
				if b1.State != snapshot.StateStalled || b1.RatePerMin != 0 || b1.ETASeconds != nil || snap.ETASeconds != nil {
					t.Fatalf("%s after the last record: %s at %.1f/min, ETA %v, pipeline ETA %v",
						snap.Time.Sub(last).Round(time.Millisecond), b1.State, b1.RatePerMin, b1.ETASeconds, snap.ETASeconds)
				}
			}
			f.stop(syscall.SIGINT)
		})
	}
}

func catOf(t *testing.T, s snapshot.Snapshot, name string) snapshot.Category {
	t.Helper()
	for _, c := range s.Categories {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s in the snapshot at %s", name, s.Time)
	return snapshot.Category{}
}
