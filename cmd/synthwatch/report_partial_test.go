package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// trialRoot is the new-user trial's root as the old Python script left
// it: no worker.json, no runs.jsonl, records by json.dumps with a float
// "timestamp", its log with its banners and progress. Categories B, C and
// D_dir have prompts; records per category as given.
func trialRoot(t *testing.T, records map[string]int) string {
	t.Helper()
	root := t.TempDir()
	now := time.Now()
	var log strings.Builder
	log.WriteString("Loading tokenizer from /shared/kimi-k2.5-int4... Vocab size: 163840 Model: /shared/kimi-k2.5-int4\n")
	for _, cat := range []string{"B", "C", "D_dir", "G_linked"} {
		n, ok := records[cat]
		if !ok {
			continue
		}
		dir := filepath.Join(root, "prepared", cat)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var p, r strings.Builder
		for i := 0; i < max(n, 80); i++ {
			fmt.Fprintf(&p, "{\"id\": \"%s-%d\", \"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}\n", cat, i)
		}
		for i := 0; i < n; i++ {
			at := float64(now.Add(-time.Duration(n-i)*time.Second).UnixNano()) / 1e9
			fmt.Fprintf(&r, "{\"id\": \"%s-%d\", \"response\": \"ok\", \"usage\": {\"completion_tokens\": 120}, \"timestamp\": %.6f}\n", cat, i, at)
		}
		os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
		os.WriteFile(filepath.Join(dir, "raw_responses.jsonl"), []byte(r.String()), 0o644)
		fmt.Fprintf(&log, "%s\nProcessing: %s (SHORT)\n%s\nRunning %d requests (concurrency=8, max_tokens=2048)...\n%d/%d (0 err) 1.3 req/s avg_comp=120tok ETA=0s\n",
			strings.Repeat("=", 60), cat, strings.Repeat("=", 60), n, n, n)
	}
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte(log.String()), 0o644)
	return root
}

func reportLocalJSON(t *testing.T, root string) reportJSON {
	t.Helper()
	out, code := execCLI(t, "report", "--local", root, "--json")
	var s reportJSON
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil {
		t.Fatalf("report --local --json: code %d, %v: %s", code, err, out)
	}
	return s
}

func category(s *digest.Summary, name string) *digest.Category {
	for i := range s.Categories {
		if s.Categories[i].Name == name {
			return &s.Categories[i]
		}
	}
	return nil
}

// badCategories are the trial's unreadable raw_responses.jsonl: each spoils
// D_dir's and gives what the report must say of it.
var badCategories = []struct {
	name, want string
	spoil      func(t *testing.T, p string)
}{
	{"directory", "raw_responses.jsonl: not a regular file (a directory)", func(t *testing.T, p string) { os.Remove(p); os.Mkdir(p, 0o755) }},
	{"fifo", "raw_responses.jsonl: not a regular file (a FIFO)", func(t *testing.T, p string) { mkfifoAt(t, filepath.Dir(p), filepath.Base(p)) }},
}

// A category whose raw_responses.jsonl its reader may not read (root's
// 0600 file read by nobody, as the trial had it; the user's mode-0 file
// when the test does not run as root) costs the report that category
// only: the built binary's report --local, text and JSON.
func TestReportUnreadableCategory(t *testing.T) {
	testgate.E2E(t)
	bin := testbin.Path(t)
	root := trialRoot(t, map[string]int{"B": 180, "C": 60, "D_dir": 40})
	raw := filepath.Join(root, "prepared", "D_dir", "raw_responses.jsonl")
	mode := os.FileMode(0o600)
	if os.Geteuid() != 0 {
		mode = 0
	}
	if err := os.Chmod(raw, mode); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	report := func(args ...string) string {
		cmd := exec.Command(bin, append([]string{"report", "--local", root}, args...)...)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+state, "XDG_STATE_HOME="+state)
		asNobody(t, cmd, root, filepath.Join(root, "logs"), state)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("report %q: %v: %s", args, err, out)
		}
		return string(out)
	}
	const want = "raw_responses.jsonl: permission denied"
	if out := report(); !strings.Contains(out, "D_dir") || !strings.Contains(out, want) || !strings.Contains(out, "total: 240 records") {
		t.Errorf("text: %s", out)
	}
	var sum reportJSON
	if out := report("--json"); json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("--json: %s", out)
	}
	if b, d := category(&sum.Summary, "B"), category(&sum.Summary, "D_dir"); b == nil || b.Records != 180 || d == nil || d.Error != want || d.Records != 0 {
		t.Errorf("--json: B %+v, D_dir %+v", b, d)
	}
}

// checkBadCategory runs report (args, then the form's flags) on a root
// with D_dir spoiled: exit 0; B and C counted; D_dir named with its error
// in the text, the JSON and the HTML, its figures unknown.
func checkBadCategory(t *testing.T, args func(root string) []string) {
	for _, tc := range badCategories {
		t.Run(tc.name, func(t *testing.T) {
			root := trialRoot(t, map[string]int{"B": 180, "C": 60, "D_dir": 40})
			tc.spoil(t, filepath.Join(root, "prepared", "D_dir", "raw_responses.jsonl"))
			report := func(flags ...string) string {
				out, code := execCLI(t, append(append([]string{"report"}, flags...), args(root)...)...)
				if code != 0 {
					t.Fatalf("report %q: code %d: %s", flags, code, out)
				}
				return out
			}
			if out := report(); !strings.Contains(out, "D_dir") || !strings.Contains(out, "unknown") || !strings.Contains(out, tc.want) ||
				!strings.Contains(out, "total: 240 records") {
				t.Errorf("text: %s", out)
			}
			var sum reportJSON
			if err := json.Unmarshal([]byte(report("--json")), &sum); err != nil {
				t.Fatal(err)
			}
			b, d := category(&sum.Summary, "B"), category(&sum.Summary, "D_dir")
			if b == nil || b.Records != 180 || b.Error != "" || d == nil || d.Error != tc.want || d.Records != 0 {
				t.Errorf("--json: B %+v, D_dir %+v", b, d)
			}
			page := filepath.Join(t.TempDir(), "night.html")
			report("--html", page)
			if html, err := os.ReadFile(page); err != nil || !strings.Contains(string(html), "D_dir") || !strings.Contains(string(html), tc.want) {
				t.Errorf("--html: %v: %s", err, html)
			}
		})
	}
}

// One category that cannot be read (its raw_responses.jsonl a directory, a
// FIFO, a file the user may not read) costs the report that category only
// (the trial's report exited 1 with no report); exit 0, as docs/HOSTS.md's
// exit codes say nothing of a partial read.
func TestReportOneBadCategory(t *testing.T) {
	checkBadCategory(t, func(root string) []string { return []string{"--local", root} })
}

// The same over SSH (a real sshd on loopback), as the trial ran it.
func TestReportOneBadCategoryOverSSH(t *testing.T) {
	s := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	bin := testbin.Path(t)
	checkBadCategory(t, func(root string) []string {
		return append(sshArgs(t, s), "--root", root, "--worker-bin", bin, s.User+"@"+s.Addr())
	})
}

// A category whose folder under prepared/ is a symlink to a folder is a
// category, as status counts it: its row, and its records in the totals
// and the run's end line.
func TestReportSymlinkedCategory(t *testing.T) {
	root := trialRoot(t, map[string]int{"B": 180, "C": 60, "G_linked": 80})
	real := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(filepath.Join(root, "prepared", "G_linked"), real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "prepared", "G_linked")); err != nil {
		t.Fatal(err)
	}
	if out, code := execCLI(t, "status", "--local", root); code != 0 || !strings.Contains(out, "G_linked") {
		t.Fatalf("status: code %d: %s", code, out)
	}
	s := reportLocalJSON(t, root)
	if g := category(&s.Summary, "G_linked"); g == nil || g.Records != 80 {
		t.Errorf("G_linked: %+v among %+v", g, s.Categories)
	}
	out, code := execCLI(t, "report", "--local", root)
	if code != 0 || !strings.Contains(out, "320 records") || !strings.Contains(out, "80 G_linked") {
		t.Errorf("report: code %d: %s", code, out)
	}
}

// bufferedScript is run_inference.py as users run it (nohup python3
// run_inference.py > logs/inference_all.log): print() without flush, so
// stdout is block-buffered and a SIGTERM loses what the buffer held; the
// records, written to their own files, are flushed. Argument 2 is how many
// progress lines it prints before it waits on a hung server: few leave the
// log with the kill's marker alone, many flush the banners and lose the
// last lines.
const bufferedScript = `import json, os, sys, time
root, lines = sys.argv[1], int(sys.argv[2])
print("Loading tokenizer from /shared/kimi-k2.5-int4... Vocab size: 163840 Model: /shared/kimi-k2.5-int4")
for name in ("B", "C"):
    print("=" * 60)
    print("Processing: %s (SHORT)" % name)
    print("=" * 60)
    print("Running 80 requests (concurrency=8, max_tokens=2048)...")
    with open(os.path.join(root, "prepared", name, "raw_responses.jsonl"), "a") as f:
        for i in range(40):
            f.write(json.dumps({"id": "%s-%d" % (name, i), "response": "ok", "usage": {"completion_tokens": 120}, "timestamp": time.time()}) + "\n")
            f.flush()
    for i in range(lines):
        print("%d/80 (0 err) 1.3 req/s avg_comp=120tok ETA=%ds" % (i % 80, 80 - i % 80))
open(os.path.join(root, "ready"), "w").close()
time.sleep(3600)
`

// The trial's own state: the old script (no worker.json, no run id), its
// stdout block-buffered into its log, stopped with `synthwatch kill`. The
// report says "stopped by you", as status does, whether its log lost all
// its lines (the kill's marker alone: "ended unknown" before) or its tail.
func TestReportTrialScriptKilledByYou(t *testing.T) {
	py := testgate.Tool(t, "python3", "the old script")
	for _, tc := range []struct {
		name  string
		lines int
	}{{"empty-log", 1}, {"lost-tail", 500}} {
		t.Run(tc.name, func(t *testing.T) {
			root := trialRoot(t, map[string]int{"B": 0, "C": 0})
			script := filepath.Join(root, "run_inference.py")
			os.WriteFile(script, []byte(bufferedScript), 0o644)
			log, err := os.OpenFile(filepath.Join(root, "logs", "inference_all.log"), os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(py, script, root, strconv.Itoa(tc.lines))
			cmd.Stdout, cmd.Stderr = log, log
			cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=") // as on the host: block-buffered
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			log.Close()
			reaped := make(chan struct{}) // reaped at once: a zombie would hold kill to its grace
			go func() { _ = cmd.Wait(); close(reaped) }()
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-reaped })
			testgate.Eventually(t, time.Minute, "the script's records", func() bool {
				_, err := os.Stat(filepath.Join(root, "ready"))
				return err == nil
			})
			if out, code := execCLI(t, "kill", "--local", root, "--grace", "5s", "--pid", strconv.Itoa(cmd.Process.Pid)); code != 0 {
				t.Fatalf("kill: code %d: %s", code, out)
			}
			<-reaped
			out, code := execCLI(t, "status", "--local", root)
			if code != 0 || !strings.Contains(out, "stopped (by you)") {
				t.Fatalf("status after kill: code %d: %s", code, out)
			}
			s := reportLocalJSON(t, root)
			if len(s.Runs) != 1 || s.Runs[0].End != digest.EndByYou || s.Runs[0].Records != 80 {
				b, _ := os.ReadFile(filepath.Join(root, "logs", "inference_all.log"))
				t.Errorf("runs: %+v, want one of 80 records stopped by you; log's end: %q", s.Runs, b[max(len(b)-300, 0):])
			}
			out, code = execCLI(t, "report", "--local", root)
			if code != 0 || !strings.Contains(out, "stopped by you") || strings.Contains(out, "ended unknown") {
				t.Errorf("report: code %d: %s", code, out)
			}
		})
	}
}
