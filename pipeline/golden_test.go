package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// hostileNames are category directories a hostile or careless host may hold.
// (A directory name cannot hold "/", so the commands write into the cwd.)
var hostileNames = []string{`$(touch synthwatch-pwned); "B9 'x`, "`touch synthwatch-pwned`", "-rf B10", "B11 with spaces", "B12\nnewline", "B13\x1b]0;title\x07"}

// pwned reports whether a hostile name's command ran (in the test's or the root's cwd).
func pwned(root string) bool {
	for _, p := range []string{"synthwatch-pwned", filepath.Join(root, "synthwatch-pwned"), filepath.Join(os.Getenv("HOME"), "synthwatch-pwned")} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// fixtureRoot lays out a root from the committed log fixtures.
func fixtureRoot(t *testing.T, name string) string {
	root := t.TempDir()
	logs := func(worker, server string) {
		for dst, src := range map[string]string{"inference_all.log": worker, "sglang_inference.log": server} {
			if src == "" {
				continue
			}
			data, err := os.ReadFile(filepath.Join("..", "testdata", "logs", src))
			must(t, err)
			write(t, filepath.Join(root, "logs", dst), string(data))
		}
	}
	switch name {
	case "python_worker_sglang_v046": // the old script: no worker.json, log only
		logs("python_worker.log", "sglang_v046.log")
		write(t, filepath.Join(root, "prepared", "B1_glaive", "prompts.jsonl"), prompts("B1", 10000))
		write(t, filepath.Join(root, "prepared", "B1_glaive", "raw_responses.jsonl"), records("B1", 0, 9998))
		write(t, filepath.Join(root, "prepared", "B2_opencodeinstruct", "prompts.jsonl"), prompts("B2", 7000))
		write(t, filepath.Join(root, "prepared", "B2_opencodeinstruct", "raw_responses.jsonl"), records("B2", 0, 1752))
	case "go_worker_dead_sglang_2026_crash":
		logs("", "sglang_mixed.log")
		write(t, filepath.Join(root, "pipeline.toml"), "[classes.SHORT]\n[classes.LONG]\n[[categories]]\nname = \"B1\"\nclass = \"SHORT\"\n[[categories]]\nname = \"B2\"\nclass = \"LONG\"\ntoken_budget = 100000\n")
		write(t, filepath.Join(root, "prepared", "B1", "prompts.jsonl"), prompts("B1", 30))
		write(t, filepath.Join(root, "prepared", "B1", "raw_responses.jsonl"), records("B1", 0, 30))
		write(t, filepath.Join(root, "prepared", "B2", "prompts.jsonl"), prompts("B2", 800))
		write(t, filepath.Join(root, "prepared", "B2", "raw_responses.jsonl"), records("B2", 0, 120))
		write(t, filepath.Join(root, "prepared", "B2", "errors.jsonl"), `{"id":"B2-999","reason":"server answered 400"}`+"\n")
		writeWorkerJSON(t, root, parse.WorkerState{PID: 999999, State: parse.WorkerRunning, Category: "B2", UpdatedAt: time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC),
			Categories: []parse.CategoryState{{Name: "B1", Class: "SHORT", Done: 30, Target: 30, State: parse.CatDone},
				{Name: "B2", Class: "LONG", Done: 120, Target: 800, Errors: 1, CompletionTokens: 456000, TokenBudget: 100000, State: parse.CatRunning}}})
	case "vllm":
		logs("", "vllm_v1.log")
		write(t, filepath.Join(root, "prepared", "A", "prompts.jsonl"), prompts("A", 5))
	case "hostile_names":
		for i, n := range hostileNames {
			write(t, filepath.Join(root, "prepared", n, "prompts.jsonl"), prompts("H", 3+i))
			write(t, filepath.Join(root, "prepared", n, "raw_responses.jsonl"), records("H", 0, i))
		}
		write(t, filepath.Join(root, "logs", "inference_all.log"), "Processing: "+hostileNames[0]+" (SHORT)\n\x1b]52;c;cGF5bG9hZA==\x07\x1b[2J evil\r\n")
	}
	// fixed times, so the snapshot is the same on every run
	fixed := time.Date(2026, 11, 29, 2, 30, 0, 0, time.UTC)
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, fixed, fixed) })
	recent := time.Date(2026, 11, 29, 2, 59, 55, 0, time.UTC) // the server is logging now
	os.Chtimes(filepath.Join(root, "logs", "sglang_inference.log"), recent, recent)
	return root
}

func TestGoldenSnapshots(t *testing.T) {
	t.Setenv("TZ", "UTC") // the host's zone, which log times are read in
	for _, name := range []string{"python_worker_sglang_v046", "go_worker_dead_sglang_2026_crash", "vllm", "hostile_names"} {
		t.Run(name, func(t *testing.T) {
			root := fixtureRoot(t, name)
			c := newClock()
			w := localWatcher(t, root, c, Options{Host: "root@gpu"})
			w.Poll(t.Context())
			c.advance(time.Second)
			s := w.Poll(t.Context()) // the second poll also flushes a trailing traceback
			s.Root = "ROOT"
			s.Server.URL = "http://127.0.0.1:CLOSED" // a free port of this run
			s.Vitals = snapshot.Vitals{}             // this machine's load, memory and disk (TestVitals* read a stand-in host)
			for i := range s.Warnings {
				s.Warnings[i] = strings.ReplaceAll(s.Warnings[i], root, "ROOT")
			}
			got, err := json.MarshalIndent(s, "", "  ")
			must(t, err)
			got = append(got, '\n')
			golden.RequireEqual(t, got) // testdata/TestGoldenSnapshots/NAME.golden; -update rewrites it
			if pwned(root) {
				t.Fatal("a category name was executed")
			}
		})
	}
}

// A hostile category name goes into the launch line as data: the worker
// gets it back byte for byte, each name after its own --only (a name may
// hold a comma), and nothing runs.
func TestLaunchQuotesHostileNames(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "prepared")) // a pipeline root: a launch refuses any other
	argsFile := filepath.Join(root, "args")
	bin := filepath.Join(root, "fake-synthwatch")
	write(t, bin, "#!/bin/sh\nprintf '%s\\n' \"$@\" > "+argsFile+"\nsleep 5\n")
	must(t, os.Chmod(bin, 0o755))
	a := actions.Actor{H: localHost(), Root: root, WorkerBin: bin}
	names := append(hostileNames[:3:3], "a,b")
	r, err := a.H.Exec(t.Context(), a.LaunchArgv(names)...)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("launch: %v %+v", err, r)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout))); err == nil {
		defer stopLaunched(pid)
	}
	var got []byte
	for i := 0; i < 50 && len(got) == 0; i++ {
		time.Sleep(50 * time.Millisecond)
		got, _ = os.ReadFile(argsFile)
	}
	want := "worker\n--root\n" + root + "\n"
	for _, n := range names {
		want += "--only\n" + n + "\n"
	}
	if string(got) != want {
		t.Fatalf("worker got args\n%q\nwant\n%q", got, want)
	}
	if pwned(root) {
		t.Fatal("a category name was executed")
	}
}

// stopLaunched ends a test's detached fake worker by its pid: its process
// group (the launch starts it with setsid), else the pid alone.
func stopLaunched(pid int) {
	if syscall.Kill(-pid, syscall.SIGKILL) != nil {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
