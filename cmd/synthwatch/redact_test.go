package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/sim"
)

// A server URL with basic-auth credentials (a gateway in front of SGLang)
// works, and its password is in no file the worker writes (the log,
// worker.json, runs.jsonl) and in no view: status's text and JSON (its
// events too), the report's text and JSON. Each shows "admin:***@".
func TestURLPasswordNeverShownOrStored(t *testing.T) {
	testgate.E2E(t)
	bin := testbin.Path(t)
	srv := sim.New(sim.Options{Speed: 50})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const secret = "hunter2pass"
	url := strings.Replace(srv.URL(), "://", "://admin:"+secret+"@", 1)
	root := nightRoot(t, url, 20)
	pid, err := actions.Actor{H: remote.Local{}, Root: root, WorkerBin: bin}.Launch(context.Background(), nil)
	if err != nil && !strings.Contains(err.Error(), "nothing left to do") { // done within launch's check (review #15)
		t.Fatal(err)
	}
	if pid > 0 {
		defer syscall.Kill(-pid, syscall.SIGKILL)
	}
	state := func() parse.WorkerState {
		b, _ := os.ReadFile(filepath.Join(root, parse.WorkerStatePath))
		st, _ := parse.ParseWorkerState(b)
		return st
	}
	testgate.Eventually(t, 2*time.Minute, "the worker done", func() bool { return state().State == parse.WorkerDone })
	if n := countFileLines(filepath.Join(root, "prepared", "B1_night", "raw_responses.jsonl")); n != 20 {
		t.Fatalf("%d records: the credentials did not work", n)
	}

	stored := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(p) == "pipeline.toml" {
			return nil
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the password", p)
		}
		if strings.Contains(string(b), "admin:***@") {
			stored++
		}
		return nil
	})
	if stored < 3 { // the log, worker.json, runs.jsonl
		t.Errorf("the redacted URL is in %d files, want the log, worker.json and runs.jsonl", stored)
	}
	for _, args := range [][]string{
		{"status", "--local", root},
		{"status", "--local", root, "--json"},
		{"report", "--local", root},
		{"report", "--local", root, "--json"},
	} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil && !strings.Contains(args[0], "status") {
			t.Errorf("%s: %v: %s", args, err, out)
		}
		if strings.Contains(string(out), secret) {
			t.Errorf("%s shows the password:\n%s", args, out)
		}
		if !strings.Contains(string(out), "admin:***@") && args[0] == "status" {
			t.Errorf("%s does not show the server:\n%s", args, out)
		}
	}
}

// The dashboard's log file and a command's stderr get what slog writes:
// a message or an error naming a URL with a password is redacted.
func TestLogRedactsURLPassword(t *testing.T) {
	var b strings.Builder
	l := slog.New(slog.NewTextHandler(&b, logOpts(slog.LevelInfo)))
	l.Warn("probe of http://admin:hunter2pass@h:1 failed", "err", errors.New(`Get "http://admin:hunter2pass@h:1/metrics": refused`), "url", "http://admin:hunter2pass@h:1")
	if out := b.String(); strings.Contains(out, "hunter2pass") || strings.Count(out, "admin:***@h:1") != 3 {
		t.Fatalf("logged %s", out)
	}
}
