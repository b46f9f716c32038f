package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/tui"
)

// oldScript is a stand-in of the users' run_inference.py, run by python3:
// records by json.dumps (", " and ": ", a float timestamp), the banners,
// "Processing: NAME (CLASS)" and the progress lines, the next category's
// file opened for append, then its requests sent with urllib and a
// timeout to a server that accepts and never answers: each time-out is a
// traceback (traceback.print_exc) in the log. It then waits, as the real
// one does on its next requests.
const oldScript = `
import json, os, sys, threading, time, traceback, urllib.request
root, url, tracebacks = sys.argv[1], sys.argv[2], int(sys.argv[3])
def banner(name, n):
    print("=" * 60); print("Processing: %s (SHORT)" % name); print("=" * 60)
    print("Running %d requests (concurrency=8, max_tokens=2048)..." % n)
for name, n in (("B1_glaive", 400), ("B2_opencodeinstruct", 600)):
    banner(name, n)
    with open(os.path.join(root, "prepared", name, "raw_responses.jsonl"), "a") as f:
        for i in range(n):
            rec = {"id": "%s-%05d" % (name, i), "messages": [{"role": "user", "content": "q %d" % i}],
                   "response": "answer", "usage": {"prompt_tokens": 12, "completion_tokens": 236, "total_tokens": 248},
                   "timestamp": time.time()}
            f.write(json.dumps(rec) + "\n")
            if (i + 1) % 200 == 0 and i + 1 < n:
                print("%d/%d (0 err) 1.3 req/s avg_comp=236tok ETA=5.2m" % (i + 1, n))
banner("B3_magicoder", 300)
out = open(os.path.join(root, "prepared", "B3_magicoder", "raw_responses.jsonl"), "a")
def call(i):
    try:
        req = urllib.request.Request(url, data=json.dumps({"id": "B3_magicoder-%05d" % i}).encode())
        with urllib.request.urlopen(req, timeout=1) as r:
            out.write(r.read().decode() + "\n")
    except Exception:
        traceback.print_exc()
threads = [threading.Thread(target=call, args=(i,)) for i in range(tracebacks)]
for t in threads: t.start()
for t in threads: t.join()
while True:
    time.sleep(1)
`

// pythonNight runs the stand-in on a fresh root, as users start it
// (nohup python3 run_inference.py > logs/inference_all.log 2>&1), waits for
// its n time-outs, then ages the night: B1 finished 40 minutes ago, B2 and
// B3's header 15 minutes ago. Under CI a missing python3 fails.
func pythonNight(t *testing.T, n int) string {
	t.Helper()
	py := testgate.Tool(t, "python3", "the old script's night")
	root := t.TempDir()
	for _, c := range []struct {
		name string
		n    int
	}{{"B1_glaive", 400}, {"B2_opencodeinstruct", 600}, {"B3_magicoder", 300}} {
		var p strings.Builder
		for i := 0; i < c.n; i++ {
			fmt.Fprintf(&p, `{"id": "%s-%05d", "messages": [{"role": "user", "content": "q %d"}]}`+"\n", c.name, i, i)
		}
		os.MkdirAll(filepath.Join(root, "prepared", c.name), 0o755)
		os.WriteFile(filepath.Join(root, "prepared", c.name, "prompts.jsonl"), []byte(p.String()), 0o644)
	}
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	script := filepath.Join(root, "run_inference.py")
	os.WriteFile(script, []byte(oldScript), 0o644)
	hang, err := net.Listen("tcp", "127.0.0.1:0") // accepts (the kernel's backlog) and never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hang.Close() })
	log, err := os.Create(filepath.Join(root, "logs", "inference_all.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(py, "-u", script, root, "http://"+hang.Addr().String()+"/generate", fmt.Sprint(n))
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, _ := os.ReadFile(log.Name())
		if strings.Count(string(data), "TimeoutError: timed out") == n {
			break
		}
		select {
		case <-exited:
			t.Fatalf("the old script ended:\n%s", data)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d time-outs in the log within 60 s:\n%s", n, data)
		}
	}
	now := time.Now()
	for name, ago := range map[string]time.Duration{"B1_glaive": 40 * time.Minute, "B2_opencodeinstruct": 15 * time.Minute, "B3_magicoder": 15 * time.Minute} {
		at := now.Add(-ago)
		os.Chtimes(filepath.Join(root, "prepared", name, "raw_responses.jsonl"), at, at)
	}
	return root
}

// The old script's night, on every path a user looks at it: B3 became
// current 15 minutes ago, has no record, and the script has logged 8
// time-outs since (the log's time is now). The one-shot status (text and
// --json, locally and over a real sshd), a freshly opened Watcher's first
// snapshot and its dashboard, status --follow's first line and the fleet
// row all say stalled, with the same reason, and ERR counts the
// tracebacks.
func TestOldScriptHangStalledInEveryView(t *testing.T) {
	const fails = 8
	root := pythonNight(t, fails)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("SSH_AUTH_SOCK", "")
	common := []string{"--server-url", "http://127.0.0.1:1", "--stall-after", "10m"}

	check := func(view string, s snapshot.Snapshot) string {
		t.Helper()
		b3 := catOf(t, s, "B3_magicoder")
		if b3.State != snapshot.StateStalled || b3.Errors != fails || !strings.HasPrefix(b3.Reason, "no new records for 15m") ||
			!strings.HasSuffix(b3.Reason, fmt.Sprintf(", %d errors", fails)) || b3.RatePerMin != 0 || b3.ETASeconds != nil {
			t.Fatalf("%s: B3 %s (%q), ERR %d, rate %.1f; worker %+v", view, b3.State, b3.Reason, b3.Errors, b3.RatePerMin, s.Worker)
		}
		if s.Worker.State != snapshot.WorkerStalled || s.Worker.Reason != "B3_magicoder: "+b3.Reason {
			t.Fatalf("%s: worker %s (%q), B3's reason %q", view, s.Worker.State, s.Worker.Reason, b3.Reason)
		}
		if b2 := catOf(t, s, "B2_opencodeinstruct"); b2.State != snapshot.StateDone || b2.Done != 600 {
			t.Fatalf("%s: B2 %s %d", view, b2.State, b2.Done)
		}
		return b3.Reason
	}
	statusJSON := func(args ...string) snapshot.Snapshot {
		t.Helper()
		var s snapshot.Snapshot
		deadline := time.Now().Add(30 * time.Second)
		for { // the writer is found once /proc shows the log it holds
			out, code := execCLI(t, append(append([]string{"status", "--json"}, common...), args...)...)
			if code != 0 {
				t.Fatalf("status --json %v: exit %d\n%s", args, code, out)
			}
			s = snapshot.Snapshot{}
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if snapshot.Alive(s.Worker.State) || time.Now().After(deadline) {
				return s
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	reason := check("status --json", statusJSON("--local", root))
	short := reason[:len("no new records for 15m")] // the seconds move on between views

	out, code := execCLI(t, append(append([]string{"status"}, common...), "--local", root)...)
	b3row := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "B3_magicoder ") {
			b3row = l
		}
	}
	if code != 0 || !strings.HasSuffix(b3row, "stalled") || !strings.Contains(b3row, fmt.Sprintf("  %d  ", fails)) ||
		!strings.Contains(out, "worker: stalled") || !strings.Contains(out, "B3_magicoder: stalled: "+short) {
		t.Fatalf("status (exit %d): B3's row %q in:\n%s", code, b3row, out)
	}

	w := pipeline.NewWatcher(remote.Local{}, pipeline.Options{Host: "local", Root: root, ServerURL: "http://127.0.0.1:1", StallAfter: 10 * time.Minute}, nil)
	live := &Live{Name: "local", Remote: remote.Local{}, Watcher: w}
	first := live.Poll(context.Background())
	check("a fresh Watcher's first snapshot", first)
	m := tea.Model(tui.New(live, tui.Config{PollEvery: time.Hour, Plain: true}))
	m, _ = m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	m, _ = m.Update(tui.PollResult(m, first, live))
	scr := ansi.Strip(m.View().Content)
	if !strings.Contains(scr, "worker stalled") || !rowSays(scr, "B3_magicoder", "stalled") || !rowSays(scr, "B3_magicoder", short) {
		t.Fatalf("the dashboard:\n%s", scr)
	}

	line, code := execCLI(t, append(append([]string{"status", "--follow", "--json", "--count", "1"}, common...), "--local", root)...)
	var fs snapshot.Snapshot
	if err := json.NewDecoder(strings.NewReader(line)).Decode(&fs); err != nil || code != 0 || strings.Count(line, "\n") != 1 {
		t.Fatalf("status --follow (exit %d, %v): %s", code, err, line)
	}
	check("status --follow's first line", fs)

	fw := pipeline.NewWatcher(remote.Local{}, pipeline.Options{Host: "local", Root: root, ServerURL: "http://127.0.0.1:1", StallAfter: 10 * time.Minute}, nil)
	flive := &Live{Name: "gpu2", Remote: remote.Local{}, Watcher: fw}
	fsnap := flive.Poll(context.Background())
	check("the fleet's host", fsnap)
	fl := tea.Model(tui.NewFleet([]tui.Backend{flive}, tui.Config{PollEvery: time.Hour, Plain: true}))
	fl, _ = fl.Update(tea.WindowSizeMsg{Width: 240, Height: 30})
	fl, _ = fl.Update(tui.FleetPollResult(fl, 0, fsnap, flive))
	scr = ansi.Strip(fl.View().Content)
	if !rowSays(scr, "gpu2", "stalled B3_magicoder") || !rowSays(scr, "gpu2", "stalled: B3_magicoder: "+short) || !rowSays(scr, "gpu2", fmt.Sprintf("%d err", fails)) {
		t.Fatalf("the fleet row:\n%s", scr)
	}

	sd := sshdtest.Start(t) // last: without sshd (outside CI) the local views are still checked
	check("status --json over sshd", statusJSON(append(sshArgs(t, sd), "--root", root, sd.User+"@"+sd.Addr())...))
}

// rowSays is whether the screen's line that holds name also holds want.
func rowSays(scr, name, want string) bool {
	for _, l := range strings.Split(scr, "\n") {
		if strings.Contains(l, name) && strings.Contains(l, want) {
			return true
		}
	}
	return false
}
