package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

// look is what one view says of one category: the four things every view
// must agree on.
type look struct {
	State  string
	Target int64
	Left   int64
	Claims bool   // a rate or an ETA
	Over   string // the caps it is past, in status's words (parse.OverCapsText)
	Ended  string // how its records ended (parse.Outcomes.Text); "?" where a view does not say
	Gate   string // its training-readiness gate (parse.GateVerdict.Text); "?" where a view does not say it whole
	// Configs: its records by server configuration (parse.ConfigText);
	// "?" where a view does not say
	Configs string
}

func (l look) String() string {
	return fmt.Sprintf("%s target %d left %d claims %v over %q ended %q gate %q configs %q", l.State, l.Target, l.Left, l.Claims, l.Over, l.Ended, l.Gate, l.Configs)
}

func gateText(g *parse.GateVerdict) string {
	if g == nil {
		return ""
	}
	return g.Text()
}

// gateLine: status's gate line of a category, under "training gate:".
var gateLine = regexp.MustCompile(`^  (\S+): (pass [\d,]+ of .*?)\s*$`)

func snapLooks(s snapshot.Snapshot) map[string]look {
	out := map[string]look{}
	for _, c := range s.Categories {
		out[c.Name] = look{string(c.State), c.Target, parse.Left(c.Done, c.Target, string(c.State)), c.RatePerMin > 0 || c.ETASeconds != nil, parse.OverCapsText(c.OverCap), endedText(c.Outcomes), gateText(c.Gate), parse.ConfigText(c.Configs)}
	}
	return out
}

// overLine: a category past a cap, in status's text ("NAME: over …") and
// under the dashboard's table ("▲ NAME over …").
var overLine = regexp.MustCompile(`^(?:▲ )?(\S+?):? (over (?:its token budget|max_samples) .*?)\s*$`)

func endedText(o *parse.Outcomes) string {
	if o == nil {
		return ""
	}
	return o.Text()
}

// endedLine: status's tokens line of a category ("  NAME: … tokens; …;
// ended: …").
var endedLine = regexp.MustCompile(`^  (\S+): .*; ended: (.*?)\s*$`)

// overs adds to looks what out's over-cap lines and ended lines say.
func overs(out string, looks map[string]look) map[string]look {
	for _, l := range strings.Split(out, "\n") {
		if m := gateLine.FindStringSubmatch(l); m != nil {
			if lk, ok := looks[m[1]]; ok {
				lk.Gate = m[2]
				looks[m[1]] = lk
			}
		}
		if m := endedLine.FindStringSubmatch(l); m != nil {
			if lk, ok := looks[m[1]]; ok {
				lk.Ended = m[2]
				lk.Configs = configsOf(l)
				looks[m[1]] = lk
			}
		}
		if m := overLine.FindStringSubmatch(l); m != nil {
			if lk, ok := looks[m[1]]; ok {
				lk.Over = m[2]
				looks[m[1]] = lk
			}
		}
	}
	return looks
}

// statusRow: NAME CLASS DONE TARGET ERR RATE ETA STATE (status's table).
var statusRow = regexp.MustCompile(`^(\S+)\s+\S+\s+(\d+)\s+(\d+)\s+\d+\s+(\d+\.\d)\s+(\S+)\s+(\S+)\s*$`)

func textLooks(out string) map[string]look {
	res := map[string]look{}
	for _, l := range strings.Split(out, "\n") {
		if m := statusRow.FindStringSubmatch(l); m != nil {
			done, _ := strconv.ParseInt(m[2], 10, 64)
			target, _ := strconv.ParseInt(m[3], 10, 64)
			res[m[1]] = look{m[6], target, parse.Left(done, target, m[6]), m[4] != "0.0" || m[5] != "-", "", "", "", ""}
		}
	}
	return overs(out, res)
}

// screenRow: the dashboard's row, NAME CLASS DONE/TARGET … RATE/m …
// ETA ERR STATE.
var screenRow = regexp.MustCompile(`^\s*(\S+)\s+\S+\s+(\d+)/(\d+)\s.*?\s(\d+\.\d)\s.*?(\S+)\s+(\d+)\s+(pending|running|stalled|done|failed|stopped|died|partial|unknown)\b`)

func screenLooks(scr string) map[string]look {
	res := map[string]look{}
	for _, l := range strings.Split(scr, "\n") {
		if m := screenRow.FindStringSubmatch(l); m != nil {
			done, _ := strconv.ParseInt(m[2], 10, 64)
			target, _ := strconv.ParseInt(m[3], 10, 64)
			res[m[1]] = look{m[7], target, parse.Left(done, target, m[7]), m[4] != "0.0" || (m[5] != "-" && m[5] != "?"), "", "?", "?", "?"}
		}
	}
	return overs(scr, res)
}

var fleetWorker = regexp.MustCompile(`● up\s.*?\b(running|stalled|stopped|exited|died|none|unknown)\b`)

// headerWorker is the dashboard header's worker state ("worker stalled pid …").
func headerWorker(scr string) string {
	if strings.Contains(scr, "worker never ran here") {
		return string(snapshot.WorkerNone)
	}
	if m := regexp.MustCompile(`worker (\S+)`).FindStringSubmatch(scr); m != nil {
		return m[1]
	}
	return ""
}

func reportLooks(s digest.Summary) map[string]look {
	out := map[string]look{}
	for _, c := range s.Categories {
		out[c.Name] = look{c.State, c.Target, c.Left(), c.ETASec != nil, parse.OverCapsText(c.OverCap), endedText(c.Outcomes), gateText(c.Gate), parse.ConfigText(c.Configs)}
	}
	return out
}

// agree fails t on any disagreement between the views' looks: the same
// categories, states, targets and work left in each, and a rate or an
// ETA claimed by all of them or by none (parse.WitnessedRate: what a
// first poll cannot measure, no view claims), and only for a category
// every view calls running.
// A category written to while the views look may have grown between
// them: grew is by how much (its lines after the last view less before
// the first), the slack its work left is allowed.
func agree(t *testing.T, root string, views map[string]map[string]look, want map[string]string, grew map[string]int64) {
	t.Helper()
	var names []string
	for v := range views {
		names = append(names, v)
	}
	sort.Strings(names)
	table := func() string {
		var b strings.Builder
		for _, v := range names {
			fmt.Fprintf(&b, "  %-24s %v\n", v, views[v])
		}
		return b.String()
	}
	ref := views[names[0]]
	for cat, st := range want {
		if ref[cat].State != st {
			t.Errorf("%s: %s is %s in %s, want %s:\n%s", root, cat, ref[cat].State, names[0], st, table())
		}
	}
	for _, v := range names {
		got := views[v]
		if len(got) != len(ref) {
			t.Errorf("%s: %s shows %d categories, %s %d:\n%s", root, v, len(got), names[0], len(ref), table())
		}
		for cat, r := range ref {
			g := got[cat]
			if g.State != r.State || g.Target != r.Target || max(g.Left-r.Left, r.Left-g.Left) > grew[cat] {
				t.Errorf("%s: %s says %s: %v; %s says %v:\n%s", root, v, cat, g, names[0], r, table())
			}
			if g.Claims && g.State != string(snapshot.StateRunning) {
				t.Errorf("%s: %s claims a rate or an ETA for %s, %s:\n%s", root, v, cat, g.State, table())
			}
			// how the records ended, against status --json: the table has
			// no room for it ("?"); a first poll that has not tallied every
			// record yet says nothing (""), as it gives no tokens
			if e := views["status --json"][cat].Ended; g.Ended != "?" && g.Ended != "" && e != "" && g.Ended != e && grew[cat] == 0 {
				t.Errorf("%s: %s says %s ended %q, status --json %q:\n%s", root, v, cat, g.Ended, e, table())
			}
			// the gate, against status --json, as the outcomes are
			if e := views["status --json"][cat].Gate; g.Gate != "?" && g.Gate != "" && e != "" && g.Gate != e && grew[cat] == 0 {
				t.Errorf("%s: %s says %s's gate is %q, status --json %q:\n%s", root, v, cat, g.Gate, e, table())
			}
			// which server made its records, likewise (parse.ConfigCounts)
			if e := views["status --json"][cat].Configs; g.Configs != "?" && g.Configs != "" && e != "" && g.Configs != e && grew[cat] == 0 {
				t.Errorf("%s: %s says %s's records by config are %q, status --json %q:\n%s", root, v, cat, g.Configs, e, table())
			}
			if g.Over != r.Over {
				t.Errorf("%s: %s says %s is %q, %s %q:\n%s", root, v, cat, g.Over, names[0], r.Over, table())
			}
			if g.Claims != r.Claims {
				t.Errorf("%s: %s claims a rate or an ETA for %s: %v; %s: %v:\n%s", root, v, cat, g.Claims, names[0], r.Claims, table())
			}
		}
	}
}

func snapReasons(s snapshot.Snapshot) map[string]string {
	out := map[string]string{}
	for _, c := range s.Categories {
		out[c.Name] = c.Reason
	}
	return out
}

// quietFor is a stall reason's duration ("no new records for 1h00m").
var quietFor = regexp.MustCompile(`for (\d+[dhms][\dhms]*)`)

// sameReasons fails t where the views that print a category's reason
// whole (status --json, --follow, the fleet's JSON, the report) word it
// differently: the same words, and the durations in them apart by no more
// than the views took (slack) and their rounding.
func sameReasons(t *testing.T, root string, reasons map[string]map[string]string, slack time.Duration) {
	t.Helper()
	ref := reasons["status --json"]
	for v, got := range reasons {
		for cat, want := range ref {
			g := got[cat]
			if quietFor.ReplaceAllString(g, "for D") != quietFor.ReplaceAllString(want, "for D") {
				t.Errorf("%s: %s says %s %q, status --json %q", root, v, cat, g, want)
				continue
			}
			gm, wm := quietFor.FindAllStringSubmatch(g, -1), quietFor.FindAllStringSubmatch(want, -1)
			for i := range gm {
				gd, ok1 := parse.ParseFormattedDuration(gm[i][1])
				wd, ok2 := parse.ParseFormattedDuration(wm[i][1])
				if !ok1 || !ok2 || max(gd-wd, wd-gd) > slack+time.Minute {
					t.Errorf("%s: %s says %s %q, status --json %q (%s apart)", root, v, cat, g, want, slack)
				}
			}
		}
	}
}

// ageRoot sets the mtimes of the files named (relative to root) to ago
// before now.
func ageRoot(t *testing.T, root string, ago map[string]time.Duration) {
	t.Helper()
	now := time.Now()
	for rel, d := range ago {
		if err := os.Chtimes(filepath.Join(root, rel), now.Add(-d), now.Add(-d)); err != nil {
			t.Fatal(err)
		}
	}
}

// relaunchScript is the old script relaunched without PYTHONUNBUFFERED,
// its stdout sent to the log with ">": its banner and progress lines sit
// in its buffer, while it appends one record every 2 s to the file it
// holds open (json.dumps, a float timestamp).
const relaunchScript = `
import json, sys, time
path, cat, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("Processing: %s (SHORT)" % cat)
with open(path, "a") as f:
    i = start
    while True:
        f.write(json.dumps({"id": "%s-%05d" % (cat, i), "response": "a", "usage": {"completion_tokens": 236}, "timestamp": time.time()}) + "\n")
        f.flush()
        print("%d/100 (0 err) 1.0 req/s" % (i + 1))
        i += 1
        time.sleep(2)
`

// bufferedRoot: B1 done (50 of 50), B2 at 30 of 100 with the relaunched
// script appending to it and an empty log. Its records carry their time
// as the old script writes it (a float "timestamp"), which every view
// reads as the witness of its rate.
func bufferedRoot(t *testing.T) string {
	py := testgate.Tool(t, "python3", "the buffered relaunch")
	root := t.TempDir()
	for name, n := range map[string]int{"B1_glaive": 50, "B2_opencodeinstruct": 100} {
		dir := filepath.Join(root, "prepared", name)
		os.MkdirAll(dir, 0o755)
		var p, r strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&p, `{"id": "%s-%05d", "messages": [{"role": "user", "content": "q"}]}`+"\n", name, i)
		}
		done := n
		if name == "B2_opencodeinstruct" {
			done = 30
		}
		for i := 0; i < done; i++ {
			fmt.Fprintf(&r, `{"id": "%s-%05d", "response": "a", "usage": {"completion_tokens": 236}, "timestamp": %.3f}`+"\n", name, i, float64(time.Now().Add(-time.Hour).Unix()))
		}
		os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
		os.WriteFile(filepath.Join(dir, "raw_responses.jsonl"), []byte(r.String()), 0o644)
	}
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	script := filepath.Join(root, "run_inference.py")
	os.WriteFile(script, []byte(relaunchScript), 0o644)
	log, err := os.Create(filepath.Join(root, "logs", "inference_all.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(py, script, filepath.Join(root, "prepared", "B2_opencodeinstruct", "raw_responses.jsonl"), "B2_opencodeinstruct", "30")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, log, log
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
	ageRoot(t, root, map[string]time.Duration{"prepared/B1_glaive/raw_responses.jsonl": time.Hour})
	testgate.Eventually(t, 30*time.Second, "the relaunched script appends", func() bool {
		// two records of its own: their times witness its rate at first sight
		return countFileLines(filepath.Join(root, "prepared", "B2_opencodeinstruct", "raw_responses.jsonl")) >= 32
	})
	return root
}

// appendedRoot: the worker answered A's 20 prompts and exited done; then
// 20 more prompts were appended (by Python, as a generator would).
func appendedRoot(t *testing.T, bin string) string {
	py := testgate.Tool(t, "python3", "prompts appended after the worker read them")
	srv := sim.New(sim.Options{Speed: 50})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "A")
	os.MkdirAll(dir, 0o755)
	var p strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&p, `{"id": "A-%02d", "messages": [{"role": "user", "content": "q"}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
	if out, err := exec.Command(bin, "worker", "--root", root, "--server", srv.URL()).CombinedOutput(); err != nil {
		t.Fatalf("worker: %v\n%s", err, out)
	}
	add := `import json,sys
with open(sys.argv[1], "a") as f:
    for i in range(20, 40):
        f.write(json.dumps({"id": "A-%02d" % i, "messages": [{"role": "user", "content": "q"}]}) + "\n")`
	if out, err := exec.Command(py, "-c", add, filepath.Join(dir, "prompts.jsonl")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// the worker read them a minute ago; the generator wrote since
	ageRoot(t, root, map[string]time.Duration{"run/worker.json": time.Minute, "prepared/A/raw_responses.jsonl": time.Minute})
	return root
}

// stoppedRoot: the Go worker on A against a slow server, SIGSTOPped (a
// Ctrl-Z, a freezer) after its first records and left so for wait.
func stoppedRoot(t *testing.T, bin string, wait time.Duration) string {
	root, pid := goWorkerRoot(t, bin)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(wait)
	return root
}

// workingRoot: the Go worker at work on A, once its worker.json gives a
// rate (the witness every view has): every view claims a rate and an ETA.
func workingRoot(t *testing.T, bin string) string {
	root, _ := goWorkerRoot(t, bin)
	testgate.Eventually(t, time.Minute, "worker.json's rate", func() bool {
		b, err := os.ReadFile(filepath.Join(root, "run", "worker.json"))
		if err != nil {
			return false
		}
		st, err := parse.ParseWorkerState(b)
		return err == nil && len(st.Categories) > 0 && st.Categories[0].Rate > 0
	})
	return root
}

// goWorkerRoot: the Go worker on A's 2000 prompts against a slow server,
// after its first records.
func goWorkerRoot(t *testing.T, bin string) (string, int) {
	srv := sim.New(sim.Options{Speed: 1})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "A")
	os.MkdirAll(dir, 0o755)
	var p strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&p, `{"id": "A-%04d", "messages": [{"role": "user", "content": "q"}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	log, err := os.Create(filepath.Join(root, "logs", "inference_all.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(bin, "worker", "--root", root, "--server", srv.URL())
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); <-exited })
	testgate.Eventually(t, time.Minute, "the worker's first records", func() bool {
		return countFileLines(filepath.Join(dir, "raw_responses.jsonl")) >= 20
	})
	return root, cmd.Process.Pid
}

// crashRoot: the server's log ends in a crash 5 h ago, and 250 records
// (Python's json.dumps, ISO finished_at) were written after it, the last
// 30 minutes ago: it came back with its log elsewhere. Nobody works now.
func crashRoot(t *testing.T) string {
	py := testgate.Tool(t, "python3", "records after a crash")
	root := t.TempDir()
	now := time.Now()
	stamp := func(d time.Duration) string { return now.Add(-d).Local().Format("2006-01-02 15:04:05") }
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(root, filepath.FromSlash(parse.ServerLogPath)), []byte(
		"["+stamp(6*time.Hour)+"] The server is fired up and ready to roll!\n"+
			"["+stamp(5*time.Hour)+"] Subprocess scheduler_0 (pid=7391) crashed with exit code -6. Triggering SIGQUIT for cleanup...\n"), 0o644)
	ageRoot(t, root, map[string]time.Duration{parse.ServerLogPath: 5 * time.Hour})
	dir := filepath.Join(root, "prepared", "A")
	os.MkdirAll(dir, 0o755)
	gen := `import json, sys, time
d, now = sys.argv[1], time.time()
with open(d + "/prompts.jsonl", "w") as f:
    for i in range(300):
        f.write(json.dumps({"id": "A-%03d" % i, "messages": [{"role": "user", "content": "q"}]}) + "\n")
with open(d + "/raw_responses.jsonl", "w") as f:
    for i in range(250):
        t = now - 4.5 * 3600 + i * 60
        f.write(json.dumps({"id": "A-%03d" % i, "response": "a", "usage": {"completion_tokens": 100},
                            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))}) + "\n")`
	if out, err := exec.Command(py, "-c", gen, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ageRoot(t, root, map[string]time.Duration{"prepared/A/raw_responses.jsonl": 30 * time.Minute, "prepared/A/prompts.jsonl": 6 * time.Hour})
	return root
}

// oldNight writes a root the old script left: each category's prompts
// and records (json.dumps' ", " and ": ", float timestamps spread over the
// hour before end, tokens each), the log and pipeline.toml as given, every
// file last written at end. Nobody works on it now.
func oldNight(t *testing.T, log, manifest string, end time.Time, cats map[string][3]int) string {
	t.Helper()
	root := t.TempDir()
	for name, n := range cats { // prompts, records, tokens a record
		dir := filepath.Join(root, "prepared", name)
		os.MkdirAll(dir, 0o755)
		var p, r strings.Builder
		for i := 0; i < n[0]; i++ {
			fmt.Fprintf(&p, `{"id": "%s-%05d", "messages": [{"role": "user", "content": "q"}]}`+"\n", name, i)
		}
		for i := 0; i < n[1]; i++ {
			at := end.Add(-time.Hour + time.Duration(i+1)*time.Hour/time.Duration(n[1]))
			finish, answer := "stop", "a"
			if i%10 == 9 { // a reasoner cut at max_tokens: no answer
				finish, answer = "length", ""
			}
			fmt.Fprintf(&r, `{"id": "%s-%05d", "response": %q, "finish_reason": %q, "usage": {"completion_tokens": %d}, "timestamp": %.3f}`+"\n", name, i, answer, finish, n[2], float64(at.UnixNano())/1e9)
		}
		os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
		if n[1] > 0 {
			os.WriteFile(filepath.Join(dir, "raw_responses.jsonl"), []byte(r.String()), 0o644)
			os.Chtimes(filepath.Join(dir, "raw_responses.jsonl"), end, end)
		}
	}
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte(log), 0o644)
	os.Chtimes(filepath.Join(root, "logs", "inference_all.log"), end, end)
	if manifest != "" {
		os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte(manifest), 0o644)
	}
	return root
}

// targetRoot: the old script's log says "NAME: 7000 prompts" (its
// --max-samples) where prompts.jsonl has 10,000 lines: B2's 7000 records
// spent its token budget (26.6M of 10M: done, nothing left), B3's did not
// (partial, 3000 left); B1's manifest caps it at 50 of its 100 prompts,
// and it holds 52 (a resume past the cap): both over, in every view.
// Before, the dashboard said 7000/7000 done where the report said
// 7,000/10,000 with 3,000 left and an ETA.
func targetRoot(t *testing.T) string {
	const log = "Processing: B1_glaive (SHORT)\nRunning 50 requests (concurrency=8, max_tokens=2048)...\n" +
		"Processing: B2_opencodeinstruct (LONG)\nB2_opencodeinstruct: 7000 prompts\nRunning 7000 requests (concurrency=8, max_tokens=8192)...\n" +
		"Processing: B3_magicoder (SHORT)\nB3_magicoder: 7000 prompts\nRunning 7000 requests (concurrency=8, max_tokens=2048)...\n" +
		"All categories finished.\n"
	const manifest = "[classes.SHORT]\nconcurrency = 8\n[classes.LONG]\nconcurrency = 8\n" +
		"[[categories]]\nname = \"B1_glaive\"\nclass = \"SHORT\"\nmax_samples = 50\n" +
		"[[categories]]\nname = \"B2_opencodeinstruct\"\nclass = \"LONG\"\ntoken_budget = 10000000\n" +
		"[[categories]]\nname = \"B3_magicoder\"\nclass = \"SHORT\"\n" +
		"[capture]\nhidden_size = 4096\n"
	return oldNight(t, log, manifest, time.Now().Add(-2*time.Hour), map[string][3]int{
		"B1_glaive": {100, 52, 236}, "B2_opencodeinstruct": {10000, 7000, 3800}, "B3_magicoder": {10000, 7000, 236}})
}

// dupRoot: the old script left A with 50 records, 3 of them written
// twice, a blank line and a torn one (a manual merge of two runs); the Go
// worker resumed it (its scan measured 5 extra lines) and stopped at
// pipeline.toml's max_samples 60 of A's 70 prompts. Then Python wrote B
// (40 records, a blank and a bad line, 50 prompts), which no worker read.
// Before, status said A 60 (lines less worker.json's extra lines) and the
// report 63 (every record) and "over max_samples by 3"; B 42 (its lines)
// against the report's 40.
func dupRoot(t *testing.T, bin string) string {
	py := testgate.Tool(t, "python3", "duplicates the worker measured")
	srv := sim.New(sim.Options{Speed: 50})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	root := t.TempDir()
	gen := `import json, os, sys, time
root, cat, prompts, records = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d = os.path.join(root, "prepared", cat)
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, "prompts.jsonl"), "w") as f:
    for i in range(prompts):
        f.write(json.dumps({"id": "%s-%03d" % (cat, i), "messages": [{"role": "user", "content": "q"}]}) + "\n")
with open(os.path.join(d, "raw_responses.jsonl"), "w") as f:
    for i in list(range(records)) + ([0, 1, 2] if cat == "A" else []):
        f.write(json.dumps({"id": "%s-%03d" % (cat, i), "response": "a", "finish_reason": "stop",
                            "usage": {"completion_tokens": 100}, "timestamp": time.time() - 7200}) + "\n")
    f.write("\n")
    f.write('{"id": "%s-999", "response": "a tor\n' % cat)`
	mk := func(cat, prompts, records string) {
		if out, err := exec.Command(py, "-c", gen, root, cat, prompts, records).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	mk("A", "70", "50")
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte("[[categories]]\nname = \"A\"\nmax_samples = 60\n"), 0o644)
	if out, err := exec.Command(bin, "worker", "--root", root, "--server", srv.URL()).CombinedOutput(); err != nil {
		t.Fatalf("worker: %v\n%s", err, out)
	}
	mk("B", "50", "40")
	ageRoot(t, root, map[string]time.Duration{"run/worker.json": time.Hour, "prepared/A/raw_responses.jsonl": time.Hour,
		"prepared/B/raw_responses.jsonl": time.Hour, "prepared/B/prompts.jsonl": time.Hour})
	return root
}

// idleRoot: B1 at 9,998 of 10,000, its last record and the log's last
// line a day old, nobody on it since. Before, the report gave it an ETA
// of 6 s.
func idleRoot(t *testing.T) string {
	const log = "Processing: B1_glaive (SHORT)\nRunning 10000 requests (concurrency=8, max_tokens=2048)...\n" +
		"9950/10000 (0 err) 1.1 req/s avg_comp=236tok ETA=0.7m\n"
	return oldNight(t, log, "", time.Now().Add(-24*time.Hour), map[string][3]int{"B1_glaive": {10000, 9998, 236}, "B2_opencodeinstruct": {100, 0, 0}})
}

// Every view of the same roots, at the same moment, says the same: the
// one-shot status (text and --json), --follow's first line, the fleet's
// status, the report's JSON (the digest on the host) and the dashboard's
// first screen (the built binary in tmux), all over a real sshd, on
// roots other tools made: the old script's hang that began an hour before
// (Python-written records), the buffered relaunch (an empty log, a live
// python appending), and prompts appended after the worker read them.
// Before, the dashboard over SSH called the hang running at 66/min, every
// view called the relaunch partial and the report "ended unknown", and
// the appended prompts were 20/20 done everywhere; the relaunch, running,
// had a rate and an ETA in no view (its records' times now witness one).
// overWant: the roots with categories past a cap, in status's words.
var overWant = map[string]map[string]string{
	"the log's 7000 prompts against 10,000, a cap and a budget": {
		"B1_glaive":           "over max_samples by 2 records (52 of 50)",
		"B2_opencodeinstruct": "over its token budget by 16.6M tokens (26.6M of 10M)",
	},
}

// captureWant: the roots whose pipeline.toml has a [capture], and the
// next stage's bytes: their completion tokens (B1 52 x 236, B2 7,000 x
// 3,800, B3 7,000 x 236) at 4 x 4,096 x 2 bytes a token; at least, as
// the old script's records give no prompt_tokens.
var captureWant = map[string]int64{
	"the log's 7000 prompts against 10,000, a cap and a budget": (52*236 + 7000*3800 + 7000*236) * 4 * 4096 * 2,
}

// endedWant: how a root's records ended (one in ten cut at max_tokens
// with an empty answer), in status's words.
var endedWant = map[string]map[string]string{
	"the log's 7000 prompts against 10,000, a cap and a budget": {
		"B1_glaive":           "47 stop, 5 truncated (9.6%), 5 empty",
		"B2_opencodeinstruct": "6,300 stop, 700 truncated (10.0%), 700 empty",
	},
}

// doneWant: DONE where it is not the line count (parse.JudgeDone), in
// status --json and the report alike; agree compares the work left in
// every view.
var doneWant = map[string]map[string]int64{
	"duplicates the worker measured, blank and bad lines": {"A": 60, "B": 40},
}

// gateMax: the roots whose pipeline.toml has a [gate] max_length; every
// root's gate, where its files did not grow while the views looked, is
// checked against Python's json module's count (digesttest.GateCount).
var gateMax = map[string]int64{
	"a thinking model's night by the old script": digesttest.GateMaxLength,
}

// gateRoot: the old script's thinking model at night (python3's
// json.dumps), its pipeline.toml's [gate] judging it; nobody works now.
func gateRoot(t *testing.T) string {
	root := t.TempDir()
	digesttest.GateNight(t, root, 400)
	return root
}

// sameGates checks status --json's and the report's gates against
// Python's count, and the dashboard's PASS cells against status's.
func sameGates(t *testing.T, name, root string, s snapshot.Snapshot, rep digest.Summary, scr string, grew map[string]int64) {
	t.Helper()
	truth := digesttest.GateCount(t, root, gateMax[name], "auto")
	for _, c := range s.Categories {
		tr, ok := truth[c.Name]
		if !ok || grew[c.Name] != 0 || tr.Records == 0 {
			continue
		}
		if d := digesttest.SameGate(c.Gate, tr); d != "" {
			t.Errorf("%s: status --json's gate of %s: %s (Python: %+v)", name, c.Name, d, tr)
		} else if cell := passCell(scr, c.Name); cell != c.Gate.PassCell() && (gateMax[name] > 0 || cell != "-" && cell != "") {
			// "-" or no column: a first screen that has not tallied every
			// record of a big file yet (as it says no outcomes then); the
			// gate's own root is small: its first screen has them all
			t.Errorf("%s: the dashboard's PASS of %s is %q, status --json's %s:\n%s", name, c.Name, cell, c.Gate.PassCell(), scr)
		}
	}
	for _, c := range rep.Categories {
		if tr, ok := truth[c.Name]; ok && grew[c.Name] == 0 && tr.Records > 0 {
			if d := digesttest.SameGate(c.Gate, tr); d != "" {
				t.Errorf("%s: the report's gate of %s: %s (Python: %+v)", name, c.Name, d, tr)
			}
		}
	}
}

// passCell is the dashboard's PASS cell in the row of name, read under
// the header's PASS ("" when the screen has no such column or row).
func passCell(scr, name string) string {
	col := -1
	for _, l := range strings.Split(scr, "\n") {
		if i := strings.Index(l, " PASS "); col < 0 && strings.Contains(l, "CATEGORY") && i >= 0 {
			col = i + 1
			continue
		}
		if f := strings.Fields(l); col >= 0 && len(f) > 0 && f[0] == name && len(l) > col {
			if cell := strings.Fields(l[col:]); len(cell) > 0 {
				return cell[0]
			}
		}
	}
	return ""
}

// goWorkerConfigs: the roots whose Go worker is frozen (its records do
// not grow while the views look), and the category whose records by
// config are checked against Python's count.
var goWorkerConfigs = map[string]string{"a SIGSTOPped worker past the stall limit": "A", "a SIGSTOPped worker within the stall limit": "A"}

func TestEveryViewSaysTheSame(t *testing.T) {
	testgate.E2E(t)
	needTmux(t)
	bin := testbin.Path(t)
	sd := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("XDG_STATE_HOME", cfg)
	target := sd.User + "@" + sd.Addr()
	host, port, _ := strings.Cut(sd.Addr(), ":")
	sshCfg := filepath.Join(t.TempDir(), "ssh_config") // a second name of the host, for the fleet
	os.WriteFile(sshCfg, []byte(fmt.Sprintf("Host gpu2\n  HostName %s\n  Port %s\n  User %s\n", host, port, sd.User)), 0o600)
	ssh := []string{"-F", sshCfg, "-i", sd.KeyPath, "-o", "UserKnownHostsFile=" + sd.KnownHosts, "-o", "StrictHostKeyChecking=yes"}

	// B3's file is older than its header: it became current after B2's
	// last record, an hour ago, not when its file was last written
	hang := pythonNight(t, 2)
	ageRoot(t, hang, map[string]time.Duration{
		"prepared/B1_glaive/raw_responses.jsonl": 100 * time.Minute, "prepared/B2_opencodeinstruct/raw_responses.jsonl": time.Hour,
		"prepared/B3_magicoder/raw_responses.jsonl": 3 * time.Hour, "logs/inference_all.log": time.Hour})
	eras, erasWant := eraRoot(t)
	const stall = 20 * time.Second
	// the stall limit from the environment, as a user's config sets it:
	// the report's digest too
	stallEnv := []string{"SYNTHWATCH_STALL_AFTER=" + stall.String()}
	roots := []struct {
		name, root string
		want       map[string]string
		env        []string // for every view
		report     []string // the report's flags
		noClaims   bool     // no view may claim a rate or an ETA, running or not; else every view claims one for a running category
		reason     string   // the stalled category's reason begins so, on the dashboard's row, in status and the report
	}{
		{"the old script's hang an hour old", hang, map[string]string{"B1_glaive": "done", "B2_opencodeinstruct": "done", "B3_magicoder": "stalled"}, nil, nil, true, "no new records for 1h0"},
		{"the buffered relaunch", bufferedRoot(t), map[string]string{"B1_glaive": "done", "B2_opencodeinstruct": "running"}, nil, nil, false, ""},
		{"prompts appended after the worker read them", appendedRoot(t, bin), map[string]string{"A": "partial"}, nil, nil, true, ""},
		{"records after a logged crash", crashRoot(t), map[string]string{"A": "partial"}, nil, nil, true, ""},
		{"a SIGSTOPped worker past the stall limit", stoppedRoot(t, bin, stall+5*time.Second), map[string]string{"A": "stalled"}, stallEnv, nil, true, "no new records for "},
		{"a SIGSTOPped worker within the stall limit", stoppedRoot(t, bin, time.Second), map[string]string{"A": "running"}, nil, nil, true, ""},
		{"the Go worker at work", "", map[string]string{"A": "running"}, nil, nil, false, ""}, // started when its turn comes (below): it would finish while the others are looked at
		{"the log's 7000 prompts against 10,000, a cap and a budget", targetRoot(t), map[string]string{"B1_glaive": "done", "B2_opencodeinstruct": "done", "B3_magicoder": "partial"}, nil, nil, true, ""},
		{"duplicates the worker measured, blank and bad lines", dupRoot(t, bin), map[string]string{"A": "done", "B": "partial"}, nil, nil, true, ""},
		{"two server configurations, the old script's records", eras, map[string]string{"B2_opencodeinstruct": "done", "B3_python": "partial"}, nil, nil, true, ""},
		{"9,998 of 10,000 and nobody on it for a day", idleRoot(t), map[string]string{"B1_glaive": "died", "B2_opencodeinstruct": "pending"}, nil, []string{"--since", "48h"}, true, ""},
		{"a thinking model's night by the old script", gateRoot(t), map[string]string{"B1_reason": "partial", "B2_reason": "partial"}, nil, nil, true, ""},
	}
	var env []string // the root's
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append(os.Environ(), "SSH_AUTH_SOCK="), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("synthwatch %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	for _, r := range roots {
		t.Run(r.name, func(t *testing.T) {
			if r.root == "" {
				r.root = workingRoot(t, bin)
			}
			env = r.env
			common := append(append([]string{}, ssh...), "--root", r.root, "--server-url", "http://127.0.0.1:1")
			views := map[string]map[string]look{}
			reasons := map[string]map[string]string{} // each view's reasons, where it prints them whole
			began := time.Now()
			lines := func() map[string]int64 {
				n := map[string]int64{}
				for cat := range r.want {
					n[cat] = int64(countFileLines(filepath.Join(r.root, "prepared", cat, "raw_responses.jsonl")))
				}
				return n
			}
			before := lines()
			// the dashboard first: its first screen is the one under test
			x := startTmux(t, 200, 30, append([]string{"XDG_STATE_HOME=" + cfg, "XDG_CONFIG_HOME=" + cfg, "SSH_AUTH_SOCK="}, r.env...),
				append(append([]string{bin}, common...), "--poll", "1h", target)...)
			scr := x.waitFor("the first screen with every category", 30*time.Second, func(scr string) bool {
				return strings.Contains(scr, "● connected") && len(screenLooks(scr)) == len(r.want) &&
					!strings.Contains(strings.ReplaceAll(scr, "unknown config", ""), " unknown ") // a state, not the old script's records' provenance
			})
			views["dashboard (tmux)"] = screenLooks(scr)
			workers := map[string]string{"dashboard (tmux)": headerWorker(scr)}
			x.keys("q")
			// the fleet screen, the same host under two names
			fx := startTmux(t, 200, 20, append([]string{"XDG_STATE_HOME=" + cfg, "XDG_CONFIG_HOME=" + cfg, "SSH_AUTH_SOCK="}, r.env...),
				append(append([]string{bin}, common...), "--poll", "1h", target, "gpu2")...)
			fscr := fx.waitFor("the fleet's first screen", 30*time.Second, func(scr string) bool {
				return strings.Contains(rowLine(scr, "gpu2"), "up") && rowDone(scr, "gpu2") >= 0 && !strings.Contains(rowLine(scr, "gpu2"), " unknown")
			})
			fleetRow := rowLine(fscr, "gpu2")
			if m := fleetWorker.FindStringSubmatch(fleetRow); m != nil {
				workers["fleet row"] = m[1] // #, HOST, ● up [rtt], WORKER
			} else {
				t.Errorf("%s: the fleet row %q", r.name, fleetRow)
			}
			fx.keys("q")

			var s snapshot.Snapshot
			if err := json.Unmarshal([]byte(run(append(append([]string{"status", "--json"}, common...), target)...)), &s); err != nil {
				t.Fatal(err)
			}
			views["status --json"] = snapLooks(s)
			reasons["status --json"] = snapReasons(s)
			workers["status --json"] = string(s.Worker.State)
			var done, total int64
			stalled := false
			for _, c := range s.Categories {
				done, total = done+c.Done, total+c.Target
				stalled = stalled || c.State == snapshot.StateStalled
			}
			if m := regexp.MustCompile(`([\d,]+)/([\d,]+)`).FindStringSubmatch(fleetRow); m == nil || strings.ReplaceAll(m[2], ",", "") != fmt.Sprint(total) {
				t.Errorf("%s: the fleet row says %q, status's targets add up to %d", r.name, fleetRow, total)
			}
			if strings.Contains(fleetRow, "stalled") != stalled {
				t.Errorf("%s: the fleet row %q, status's categories stalled: %v", r.name, fleetRow, stalled)
			}
			statusText := run(append(append([]string{"status"}, common...), target)...)
			views["status"] = textLooks(statusText)
			// two lines: the second judged after a poll's growth, as a long watch
			lines2 := run(append(append([]string{"status", "--follow", "--json", "--count", "2", "--poll", "2s"}, common...), target)...)
			dec := json.NewDecoder(strings.NewReader(lines2))
			for i := 1; i <= 2; i++ {
				var f snapshot.Snapshot
				if err := dec.Decode(&f); err != nil {
					t.Fatalf("--follow, line %d: %v: %s", i, err, lines2)
				}
				v := fmt.Sprintf("status --follow, line %d", i)
				views[v], reasons[v], workers[v] = snapLooks(f), snapReasons(f), string(f.Worker.State)
			}
			var fleet map[string]json.RawMessage
			if err := json.Unmarshal([]byte(run(append(append([]string{"status", "--json"}, common...), target, "gpu2")...)), &fleet); err != nil {
				t.Fatal(err)
			}
			for h, raw := range fleet {
				var fs snapshot.Snapshot
				if err := json.Unmarshal(raw, &fs); err != nil {
					t.Fatal(err)
				}
				views["fleet status "+h] = snapLooks(fs)
				reasons["fleet status "+h] = snapReasons(fs)
				workers["fleet status "+h] = string(fs.Worker.State)
			}
			var rep digest.Summary
			repArgs := append(append(append([]string{"report", "--json", "--worker-bin", bin}, ssh...), "--root", r.root), r.report...)
			if err := json.Unmarshal([]byte(run(append(repArgs, target)...)), &rep); err != nil {
				t.Fatal(err)
			}
			for _, in := range rep.Incidents {
				if in.Kind == digest.KindOutage && in.Still && rep.Categories[0].Last != nil && rep.Categories[0].Last.After(in.Time) {
					t.Errorf("%s: the outage from %s is still under way, with records written after it: %s", r.name, in.Time, in.Text)
				}
			}
			views["report --json"] = reportLooks(rep)
			if want, ok := captureWant[r.name]; ok { // the next stage's disk: the same bytes in status and the report
				words := "hidden states for the next stage: at least " + parse.FormatBytes(want)
				switch {
				case s.Capture == nil || s.Capture.Bytes != want || !s.Capture.Partial:
					t.Errorf("%s: status --json's capture %+v, want at least %d bytes", r.name, s.Capture, want)
				case rep.Capture == nil || rep.Capture.Bytes != want:
					t.Errorf("%s: the report's capture %+v, want %d bytes", r.name, rep.Capture, want)
				case !strings.Contains(statusText, words):
					t.Errorf("%s: status does not say %q:\n%s", r.name, words, statusText)
				}
			} else if s.Capture != nil || rep.Capture != nil {
				t.Errorf("%s: a capture forecast with no [capture]: %+v %+v", r.name, s.Capture, rep.Capture)
			}
			reasons["report --json"] = map[string]string{}
			for _, c := range rep.Categories {
				reasons["report --json"][c.Name] = c.Reason
			}
			workers["report --json"] = rep.WorkerState
			for v, w := range workers {
				if w != workers["status --json"] {
					t.Errorf("%s: the worker is %q in %s, %q in status --json: %v", r.name, w, v, workers["status --json"], workers)
				}
			}
			grew := lines()
			for cat, n := range before {
				grew[cat] -= n
			}
			agree(t, r.name, views, r.want, grew)
			sameGates(t, r.name, r.root, s, rep, scr, grew)
			for cat, want := range endedWant[r.name] { // and every view that says it agrees (agree)
				if got := views["status --json"][cat].Ended; got != want {
					t.Errorf("%s: status --json says %s ended %q, want %q", r.name, cat, got, want)
				}
			}
			for cat, want := range doneWant[r.name] {
				for _, c := range s.Categories {
					if c.Name == cat && c.Done != want {
						t.Errorf("%s: status --json says %s is %d done, want %d", r.name, cat, c.Done, want)
					}
				}
				for _, c := range rep.Categories {
					if c.Name == cat && c.Done != want {
						t.Errorf("%s: the report says %s is %d done, want %d", r.name, cat, c.Done, want)
					}
				}
			}
			for cat, want := range erasWant { // Python's count: the report's, and every view's that says (a first poll by the fallback may not)
				for v, looks := range views {
					if got := looks[cat].Configs; r.root == eras && (got != want && got != "" && got != "?" || v == "report --json" && got != want) {
						t.Errorf("%s: %s says %s's records by config are %q, Python's json counts %q", r.name, v, cat, got, want)
					}
				}
			}
			if cat, ok := goWorkerConfigs[r.name]; ok { // the Go worker's runs, by Python's count
				want := pyRunConfigs(t, r.root, cat)
				for _, v := range []string{"status --json", "report --json"} {
					if got := views[v][cat].Configs; got != want || want == "" {
						t.Errorf("%s: %s says %s's records by config are %q, Python's json counts %q", r.name, v, cat, got, want)
					}
				}
			}
			for cat, want := range overWant[r.name] { // and every view agrees with it (agree)
				if got := views["status --json"][cat].Over; got != want {
					t.Errorf("%s: status --json says %s is %q, want %q", r.name, cat, got, want)
				}
			}
			if over := strings.Contains(fleetRow, "over cap"); over != (len(overWant[r.name]) > 0) {
				t.Errorf("%s: the fleet row %q, categories over a cap: %v", r.name, fleetRow, overWant[r.name])
			}
			sameReasons(t, r.name, reasons, time.Since(began))
			for cat, st := range r.want {
				if st != "stalled" || r.reason == "" {
					continue
				}
				// timed from the stall's real start, read from the host: the
				// same in the first screen as in a one-shot status
				if !rowSays(scr, cat, r.reason) {
					t.Errorf("%s: the dashboard's row of %s does not say %q:\n%s", r.name, cat, r.reason, scr)
				}
				for _, c := range s.Categories {
					if c.Name == cat && !strings.HasPrefix(c.Reason, r.reason) {
						t.Errorf("%s: status says %s %q, want %q…", r.name, cat, c.Reason, r.reason)
					}
				}
				for _, c := range rep.Categories {
					if c.Name == cat && !strings.HasPrefix(c.Reason, r.reason) {
						t.Errorf("%s: the report says %s %q, want %q…", r.name, cat, c.Reason, r.reason)
					}
				}
			}
			for v, looks := range views {
				for cat, l := range looks {
					if r.noClaims && l.Claims {
						t.Errorf("%s: %s claims a rate or an ETA for %s (%v)", r.name, v, cat, l)
					}
					if r.want[cat] == "running" && !r.noClaims && !l.Claims {
						t.Errorf("%s: %s claims no rate or ETA for %s, whose worker.json or records' times give one (%v)", r.name, v, cat, l)
					}
				}
			}
		})
	}
}
