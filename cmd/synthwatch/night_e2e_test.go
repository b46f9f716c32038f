package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

// The night, for real: the worker against sim over a real sshd,
// two stops through `synthwatch kill`, the server killed (no word in its
// log) for a known time, a kill -9 of the worker, a category that hangs
// for a known time, and a last run that finishes. `synthwatch report
// --json` over the same sshd tells each run's end, the outage and the
// hang as they were done, to the server log's beat and the worker's.
func TestReportTellsTheNightAsItWas(t *testing.T) {
	testgate.E2E(t)
	bin := testbin.Path(t)
	s := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	root := t.TempDir()
	logs := filepath.Join(root, "logs")
	os.MkdirAll(logs, 0o755)
	srvLog, err := os.OpenFile(filepath.Join(logs, "sglang_inference.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer srvLog.Close()
	const speed = 4
	srv := sim.New(sim.Options{Speed: speed, Log: srvLog})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	writeNightRoot(t, root, srv.URL(), map[string]int{"B1_night": 900, "B2_hang": 40})
	defer exec.Command("pkill", "-KILL", "-f", "worker --root "+root).Run()

	ssh := append(sshArgs(t, s), "--root", root)
	target := s.User + "@" + s.Addr()
	cli := func(args ...string) string {
		t.Helper()
		out, code := execCLI(t, append(append(append([]string{args[0]}, ssh...), args[1:]...), target)...)
		if code != 0 {
			t.Fatalf("%s: code %d: %s", args[0], code, out)
		}
		return out
	}
	raw := func(cat string) int {
		return countFileLines(filepath.Join(root, "prepared", cat, "raw_responses.jsonl"))
	}
	state := func() parse.WorkerState {
		b, _ := os.ReadFile(filepath.Join(root, "run", "worker.json"))
		st, _ := parse.ParseWorkerState(b)
		return st
	}
	launch := func() int {
		t.Helper()
		before := state().PID
		cli("launch", "--worker-bin", bin)
		var pid int
		testgate.Eventually(t, time.Minute, "the new worker running", func() bool {
			st := state()
			pid = st.PID
			return pid != before && st.State == parse.WorkerRunning
		})
		return pid
	}

	// two runs stopped by synthwatch kill
	for _, upTo := range []int{60, 160} {
		launch()
		testgate.Eventually(t, 2*time.Minute, fmt.Sprintf("%d records", upTo), func() bool { return raw("B1_night") >= upTo })
		cli("kill", "--grace", "20s")
	}
	// the server dies without a word for a known time
	pid3 := launch()
	testgate.Eventually(t, 2*time.Minute, "260 records", func() bool { return raw("B1_night") >= 260 })
	const down = 8 * time.Second
	downAt := time.Now()
	srv.Down(down)
	testgate.Eventually(t, 2*time.Minute, "records again after the outage", func() bool {
		n := raw("B1_night")
		time.Sleep(time.Second)
		return time.Since(downAt) > down && raw("B1_night") > n
	})
	// a kill -9 of the worker
	time.Sleep(time.Second)
	killedAt := time.Now()
	if err := syscall.Kill(pid3, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testgate.Eventually(t, time.Minute, "pid 3 gone", func() bool { return !alive(pid3) || zombie(pid3) })
	// B2 hangs for a known time: its requests are held by the server
	srv.SetFaults(sim.Faults{StallMatch: "hang-b2"})
	launch()
	testgate.Eventually(t, 3*time.Minute, "the worker on B2_hang", func() bool { return state().Category == "B2_hang" })
	const hang = 20 * time.Second
	time.Sleep(hang)
	srv.SetFaults(sim.Faults{})
	testgate.Eventually(t, 3*time.Minute, "the last run done", func() bool { return state().State == parse.WorkerDone })

	out := cli("report", "--worker-bin", bin, "--json", "--since", "6m", "--every", "1m", "--stall", "10s")
	var r reportJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report --json: %v: %s", err, out)
	}
	var ends []string
	for _, run := range r.Runs {
		ends = append(ends, run.End)
	}
	if want := []string{digest.EndByYou, digest.EndByYou, digest.EndDied, digest.EndFinished}; strings.Join(ends, ",") != strings.Join(want, ",") {
		t.Errorf("run ends %v, want %v", ends, want)
	}
	if len(r.Runs) == 4 {
		if d := r.Runs[2]; d.PID != pid3 || d.EndAt == nil || d.EndAt.After(killedAt.Add(time.Second)) || killedAt.Sub(*d.EndAt) > 5*time.Second {
			t.Errorf("the killed run's last evidence %v, killed at %v: %+v", d.EndAt, killedAt, d)
		}
	}
	beat := 2 * time.Second / speed // the sim's log interval: the outage's edges are known to it
	const warmUp = 3 * time.Second / speed
	var outages, stalls, waits []digest.Incident
	for _, in := range r.Incidents {
		switch in.Kind {
		case digest.KindOutage:
			outages = append(outages, in)
		case digest.KindStall:
			stalls = append(stalls, in)
		case digest.KindWait: // the third run's; the first may wait on the sim's warm-up too
			if len(r.Runs) == 4 && in.Run == r.Runs[2].ID {
				waits = append(waits, in)
			}
		}
	}
	// the worker's side of the outage, from its log's waiting and back
	// lines, placed after its last record before it: the server was down
	// for down, then warmed up
	if len(waits) != 1 || waits[0].End == nil {
		t.Errorf("waits %+v, want one of run 3, ended", waits)
	} else if w := waits[0]; w.Time.After(downAt.Add(time.Second)) || downAt.Sub(w.Time) > 3*time.Second ||
		w.Span(r.Now) < down-2*time.Second || w.Span(r.Now) > down+warmUp+3*time.Second {
		t.Errorf("the worker's wait %v for %s; the server went down at %v for %s", w.Time, w.Span(r.Now), downAt, down)
	}
	if len(outages) != 1 || outages[0].End == nil {
		t.Fatalf("outages %+v, want one of %s from %v", outages, down, downAt)
	}
	o := outages[0]
	warm := warmUp
	if d := o.Span(r.Now) - (down + warm); o.Time.After(downAt) || downAt.Sub(o.Time) > beat+time.Second || d < -beat-time.Second || d > beat+2*time.Second {
		t.Errorf("outage %v for %s; the server went down at %v for %s (+%s warm-up)", o.Time, o.Span(r.Now), downAt, down, warm)
	}
	var b2 *digest.Incident
	for i, st := range stalls {
		if st.Category == "B2_hang" {
			b2 = &stalls[i]
		}
	}
	if b2 == nil || b2.End == nil || b2.Span(r.Now) < hang-2*time.Second || b2.Span(r.Now) > hang+10*time.Second {
		t.Errorf("B2's hang: %+v of %+v, want about %s", b2, stalls, hang)
	}
	t.Logf("report text:\n%s", cli("report", "--worker-bin", bin, "--since", "6m", "--every", "1m", "--stall", "10s"))
	// the page: the outage and the hang as bands on both charts
	page := os.Getenv("SW_NIGHT_HTML") // where to keep it, for docs/
	if page == "" {
		page = filepath.Join(t.TempDir(), "night.html")
	}
	cli("report", "--worker-bin", bin, "--since", "6m", "--every", "1m", "--stall", "10s", "--html", page)
	html, _ := os.ReadFile(page)
	if n := strings.Count(string(html), `<rect class="band"`); n < 2*2 {
		t.Errorf("%d incident bands on the page, want the outage and the hang on both charts", n)
	}
}

func writeNightRoot(t *testing.T, root, srvURL string, cats map[string]int) {
	var toml bytes.Buffer
	fmt.Fprintf(&toml, "server = %q\n[classes.SHORT]\nconcurrency = 16\n", srvURL)
	for _, name := range []string{"B1_night", "B2_hang"} {
		n := cats[name]
		dir := filepath.Join(root, "prepared", name)
		os.MkdirAll(dir, 0o755)
		f, _ := os.Create(filepath.Join(dir, "prompts.jsonl"))
		w := bufio.NewWriter(f)
		content := "q"
		if name == "B2_hang" {
			content = "hang-b2 q"
		}
		for i := 0; i < n; i++ {
			fmt.Fprintf(w, `{"id":%d,"messages":[{"role":"user","content":%q}]}`+"\n", i, content)
		}
		w.Flush()
		f.Close()
		fmt.Fprintf(&toml, "[[categories]]\nname = %q\n", name)
	}
	if err := os.WriteFile(filepath.Join(root, "pipeline.toml"), toml.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func countFileLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// zombie: a killed child of this test not reaped yet counts as gone.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}
