package remote

import (
	"context"
	"fmt"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// manyCategories is a root with n category folders, each with 3 prompts
// and 1 record (the trial's m1).
func manyCategories(tb testing.TB, n int) string {
	tb.Helper()
	prep := filepath.Join(tb.TempDir(), "prepared")
	for i := 0; i < n; i++ {
		d := filepath.Join(prep, fmt.Sprintf("C%05d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte("{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n"), 0o644)
		os.WriteFile(filepath.Join(d, "raw_responses.jsonl"), []byte("{\"id\":1}\n"), 0o644)
	}
	return prep
}

// sshdMaster is the pid of s's listening sshd: its descendants are what a
// host runs for the link.
func sshdMaster(tb testing.TB, s *sshdtest.Server) int {
	tb.Helper()
	out, err := exec.Command("pgrep", "-o", "-f", "sshd -D -e -f "+filepath.Join(s.Dir, "sshd_config")).Output()
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid == 0 {
		tb.Fatalf("sshd pid: %v %q", err, out)
	}
	return pid
}

// peakProcs samples the processes under master until the returned func is
// called, which gives the most seen at once.
func peakProcs(master int) func() int {
	var mu sync.Mutex
	peak := 0
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			n := len(sshdtest.Descendants(master))
			mu.Lock()
			peak = max(peak, n)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() int {
		close(done)
		<-ended
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// coldEach is a cold poll's discovery batch of the root prep: every
// category's runs tailed and its records and prompts counted.
func coldEach(prep string) *Batch {
	b := &Batch{}
	b.Each(prep, []*Tail{NewTail("runs.jsonl")}, []*Counter{NewCounter("raw_responses.jsonl"), NewCounter("prompts.jsonl")})
	return b
}

// runColdEach runs coldEach with run (one exec of the one-shot batch, or
// an agent's request) and checks every category was read; it returns the
// most processes the host ran at once for the link.
func runColdEach(tb testing.TB, run func(context.Context, *Batch) (*answers, error), master int, prep string, n int) int {
	tb.Helper()
	b := coldEach(prep)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // bounds a hang (10,000 on a loaded 2-core box: minutes)
	defer cancel()
	stop := peakProcs(master)
	a, err := run(ctx, b)
	peak := stop()
	if err != nil {
		tb.Fatal(err)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		p := filepath.Join(prep, fmt.Sprintf("C%05d", i), "prompts.jsonl")
		if st := a.stats[p]; st.err != nil || st.fi.Size != 27 || len(a.reads[p]) == 0 {
			tb.Fatalf("%s: %+v, %d reads", p, st, len(a.reads[p]))
		}
	}
	if len(a.stats) != 3*n {
		tb.Fatalf("%d stats, want %d", len(a.stats), 3*n)
	}
	return peak
}

// oneShot runs a batch as the one-shot exec over h.
func oneShot(h *SSH) func(context.Context, *Batch) (*answers, error) {
	return func(ctx context.Context, b *Batch) (*answers, error) {
		res, err := h.Exec(ctx, b.Argv()...)
		if err != nil {
			return nil, err
		}
		return parseBatchOf(res.Stdout, b, nil)
	}
}

// A cold poll of 600 categories over a real sshd runs a bounded number of
// processes on the host at a time (the trial's commit forked a subshell
// per folder, all at once: 2,000 took the load to 63 on 2 cores), and
// still reads every one.
func TestColdPollOfManyCategoriesForksBounded(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	t.Parallel()
	const n = 600
	prep := manyCategories(t, n)
	s := sshdtest.Start(t)
	h := dial(t, opts(t, s))
	peak := runColdEach(t, oneShot(h), sshdMaster(t, s), prep, n)
	t.Logf("%d categories: at most %d processes under sshd at once", n, peak)
	// sshd's session processes, the batch's shell, and 8 runs of folders
	// with the few commands each runs at a time: far from one per folder
	if peak > 150 {
		t.Errorf("%d processes at once for %d categories, want a bound that does not grow with them", peak, n)
	}
}

// With the deployed binary as the agent, a first read of 2,000 categories
// runs a handful of processes on the host, whatever their number: sshd's,
// the launcher's shell and its probe of the binary, the agent.
func TestColdPollThroughTheBinaryForksAHandful(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	t.Parallel()
	const n = 2000
	prep := manyCategories(t, n)
	s := sshdtest.Start(t)
	h := dial(t, opts(t, s))
	ag := NewAgent(h)
	ag.UseBinary(selfAsBinary(t))
	t.Cleanup(ag.Close)
	peak := runColdEach(t, ag.Run, sshdMaster(t, s), prep, n)
	if !strings.HasPrefix(ag.Kind(), "go ") {
		t.Fatalf("the agent that answered: %q, want the deployed binary", ag.Kind())
	}
	t.Logf("%d categories through the binary: at most %d processes under sshd at once", n, peak)
	if peak > 12 {
		t.Errorf("%d processes at once, want a handful", peak)
	}
	// the steady polls after it name every category's files: the same
	// agent answers them (it does not start anew for its many aliases)
	steady := &Batch{}
	for i := 0; i < n; i++ {
		d := filepath.Join(prep, fmt.Sprintf("C%05d", i))
		steady.Tail(NewTail(filepath.Join(d, "runs.jsonl")))
		steady.Count(NewCounter(filepath.Join(d, "raw_responses.jsonl")))
		steady.Count(NewCounter(filepath.Join(d, "prompts.jsonl")))
	}
	for range 2 {
		if _, err := ag.Run(t.Context(), steady); err != nil {
			t.Fatal(err)
		}
	}
	if starts, reqs := ag.Stats(); starts != 1 || reqs != 3 {
		t.Errorf("%d agents started for %d requests, want 1 for 3", starts, reqs)
	}
}

// BenchmarkColdPoll10k: the first read of 10,000 categories over a real
// sshd, by the one-shot batch (shell) and by the deployed binary's agent,
// started afresh each time as a cold poll starts it: wall time per poll
// and the most host processes at once. SW_SCALE_N changes the number.
func BenchmarkColdPoll10k(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("SW_SCALE_N")); err == nil && v > 0 {
		n = v
	}
	prep := manyCategories(b, n)
	s := sshdtest.Start(b)
	h := dial(b, opts(b, s))
	master := sshdMaster(b, s)
	bin := selfAsBinary(b)
	for _, via := range []string{"batch", "binary"} {
		b.Run(via, func(b *testing.B) {
			peak := 0
			var took time.Duration
			for b.Loop() {
				run := oneShot(h)
				if via == "binary" {
					ag := NewAgent(h)
					ag.UseBinary(bin)
					defer ag.Close()
					run = ag.Run
				}
				start := time.Now()
				peak = max(peak, runColdEach(b, run, master, prep, n))
				took += time.Since(start)
			}
			b.ReportMetric(float64(peak), "peak_procs")
			b.ReportMetric(took.Seconds()/float64(b.N), "s/poll")
		})
	}
}
