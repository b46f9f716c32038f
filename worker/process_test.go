package worker

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

func binary(t testing.TB) string { return testbin.Path(t) }

func TestMain(m *testing.M) { testbin.Main(m) }

func workerCmd(t testing.TB, root, server string, extra ...string) *exec.Cmd {
	args := append([]string{"worker", "--root", root, "--server", server}, extra...)
	cmd := exec.Command(binary(t), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// The contract under the worst a process can suffer: kill -9 at random
// moments, 20 times (50 in the reliability suite: SW_RELIABILITY=1), each
// followed by a resume. In the end every id is written exactly once and
// every line is whole JSON.
func TestKill9AtRandomMomentsThenResume(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	kill9(t, 20)
}

func TestReliabilityKill9x50(t *testing.T) {
	testgate.Reliability(t)
	kill9(t, 50)
}

func kill9(t *testing.T, times int) {
	n := 1500 + 60*times
	root := makeRoot(t, map[string]int{"B1": n})
	s := startSim(t, sim.Options{Speed: 40, ContentBytes: 2000})
	out := filepath.Join(root, "prepared", "B1", "raw_responses.jsonl")
	kills, torn := 0, 0
	for kills < times {
		cmd := workerCmd(t, root, s.URL(), "--concurrency", "32")
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+rand.IntN(400)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		kills++
		if strings.Contains(log.String(), "All categories finished") {
			t.Fatalf("finished before kill %d; make the job longer", kills)
		}
		// whole lines and no duplicates after every kill; a torn tail may
		// stay until the next start repairs it
		if _, err := os.Stat(out); err != nil {
			continue // killed before its first write (a loaded machine starts it slowly): nothing to check
		}
		if _, tornTail := checkOutputTorn(t, root, "B1", -1); tornTail {
			torn++
		}
	}
	before := countLines(t, out)
	cmd := workerCmd(t, root, s.URL(), "--concurrency", "32")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	checkOutput(t, root, "B1", n)
	t.Logf("%d kills, %d left a torn tail; %d records before the final run", kills, torn, before)
}

// The disk fills mid-run (a file size limit, so a write fails part way as
// on a full disk): the worker takes back the partial line, says why, stops
// with an error, and the next start finishes with every id once.
func TestWriteFailureMidRunThenResume(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	const n, limitBlocks = 300, 200 // ulimit -f counts 512-byte blocks: 100 KiB
	root := makeRoot(t, map[string]int{"B1": n})
	s := startSim(t, sim.Options{Speed: 40, ContentBytes: 1500})
	out := filepath.Join(root, "prepared", "B1", "raw_responses.jsonl")
	cmd := exec.Command("sh", "-c", `ulimit -f "$0" && exec "$@"`, strconv.Itoa(limitBlocks),
		binary(t), "worker", "--root", root, "--server", s.URL(), "--concurrency", "16")
	log, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the worker did not stop on a failed write:\n%s", log)
	}
	if !strings.Contains(string(log), "ERROR:") || !strings.Contains(string(log), "file too large") {
		t.Fatalf("no clear error in the log:\n%s", log)
	}
	st, _ := os.Stat(out)
	if st.Size() > limitBlocks*512 {
		t.Fatalf("%d bytes written past the limit", st.Size())
	}
	ids, _ := checkOutputTorn(t, root, "B1", -1)
	if data, _ := os.ReadFile(out); len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("the partial line was not taken back (%d bytes)", len(data))
	}
	if state := readState(t, root); state["state"] != "failed" {
		t.Errorf("worker.json state %v, want failed", state["state"])
	}
	written := len(ids)
	if out, err := workerCmd(t, root, s.URL()).CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	checkOutput(t, root, "B1", n)
	t.Logf("%d records before the write failed, %d after the resume", written, n)
}

// SIGTERM stops issuing, lets requests in flight finish within --grace,
// writes them, and exits 0.
func TestSIGTERMGrace(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 400})
	// ~250 tokens at 40 tok/s and speed 1: each request takes ~6 s; the
	// grace is long enough that a loaded machine cannot outlast it
	s := startSim(t, sim.Options{Speed: 1})
	cmd := workerCmd(t, root, s.URL(), "--concurrency", "16", "--grace", "2m")
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testgate.Eventually(t, time.Minute, "16 requests in flight", func() bool { return len(s.LiveRIDs()) == 16 })
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, log.String())
	}
	t.Logf("stopped %s after SIGTERM (grace 2m)", time.Since(start))
	ids := checkOutput(t, root, "B1", -1)
	// every answer the server completed is written, and those are at least
	// the 16 that were in flight at SIGTERM; nothing is left running
	met := simMetrics(t, s)
	if len(ids) < 16 || float64(len(ids)) != met.Requests.V || met.RunningReqs.V != 0 {
		t.Errorf("%d records written, the server answered %v and still runs %v; want every answer written, at least the 16 in flight\n%s",
			len(ids), met.Requests.V, met.RunningReqs.V, log.String())
	}
	if st := readState(t, root); st["state"] != parse.WorkerStopped {
		t.Errorf("worker.json state %v", st["state"])
	}
	if !strings.Contains(log.String(), "Stop requested") {
		t.Errorf("log:\n%s", log.String())
	}
}

// A grace shorter than the requests abandons them: nothing partial is
// written, and the exit is still clean.
func TestSIGTERMGraceExpires(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 50})
	s := startSim(t, sim.Options{Speed: 1})
	cmd := workerCmd(t, root, s.URL(), "--concurrency", "8", "--grace", "300ms")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testgate.Eventually(t, time.Minute, "requests in flight", func() bool { return len(s.LiveRIDs()) > 0 })
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(time.Minute): // bounds a hang: the grace is 300 ms, a request ~6 s
		t.Fatal("worker did not exit after its grace")
	}
	checkOutput(t, root, "B1", -1)
}

// The buffering bug of the Python script must never come back: started with
// nohup and its output redirected to a file, the worker's progress lines are
// in the file while it runs.
func TestNohupLogIsNotBuffered(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	root := makeRoot(t, map[string]int{"B1": 3000})
	s := startSim(t, sim.Options{Speed: 20})
	logPath := filepath.Join(root, "logs", "inference_all.log")
	pidPath := filepath.Join(root, "pid")
	script := `nohup "$0" worker --root "$1" --server "$2" --concurrency 64 > "$3" 2>&1 & echo $! > "$4"`
	if out, err := exec.Command("sh", "-c", script, binary(t), root, s.URL(), logPath, pidPath).CombinedOutput(); err != nil {
		t.Fatalf("nohup: %v %s", err, out)
	}
	pidText, _ := os.ReadFile(pidPath)
	var pid int
	for _, c := range strings.TrimSpace(string(pidText)) {
		pid = pid*10 + int(c-'0')
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(logPath)
		if l := parse.ParseWorkerLine(lastProgress(string(data))); l.Kind == parse.WProgress && l.Done > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress line in the nohup log after 30 s:\n%s", data)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the worker had already exited: the test proves nothing (%v)", err)
	}
}

func lastProgress(log string) string {
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if parse.ParseWorkerLine(lines[i]).Kind == parse.WProgress {
			return lines[i]
		}
	}
	return ""
}
