package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
)

// twoCategoryRoot is a root with categories A and B of 3 prompts each.
func twoCategoryRoot(t *testing.T) string {
	root := t.TempDir()
	for _, c := range []string{"A", "B"} {
		dir := filepath.Join(root, "prepared", c)
		os.MkdirAll(dir, 0o755)
		var b strings.Builder
		for i := range 3 {
			fmt.Fprintf(&b, `{"id":%d,"messages":[{"role":"user","content":"q"}]}`+"\n", i)
		}
		os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(b.String()), 0o644)
	}
	return root
}

// runBinWorker runs the built binary's worker and gives its output and
// exit code (-1: it did not end within limit).
func runBinWorker(t *testing.T, limit time.Duration, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(testbin.Path(t), append([]string{"worker"}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), ee.ExitCode()
		}
		return out.String(), 0
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		return out.String(), -1
	}
}

// A worker that went through every category and failed some exits 5 (the
// review: it exited 0, and `worker && upload` went on with nothing).
func TestWorkerExitsFiveWhenCategoriesFailed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"object":"error","message":"bad request","code":400}`)
	}))
	defer srv.Close()
	out, code := runBinWorker(t, 2*time.Minute, "--root", twoCategoryRoot(t), "--server", srv.URL, "--attempts", "1")
	if code != exitCategoriesFailed || !strings.HasSuffix(strings.TrimSpace(out), "Went through every category; 2 failed: A, B.") {
		t.Fatalf("exit %d, want %d:\n%s", code, exitCategoriesFailed, out)
	}
}

// A server that answers 401 on /health (a gateway that wants a key) stops
// the worker with the auth error, at once, instead of waiting for it for
// ever; no line carries the URL's password.
func TestWorkerStopsOn401Health(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "://", "://admin:hunter2pass@", 1)
	out, code := runBinWorker(t, time.Minute, "--root", twoCategoryRoot(t), "--server", url)
	want := "the server refuses the worker: 401 Unauthorized from GET http://admin:***@" + strings.TrimPrefix(srv.URL, "http://") + "/health (the server wants an API key: --api-key-file PATH or SYNTHWATCH_API_KEY)"
	if code != 1 || !strings.Contains(out, "ERROR: "+want) || strings.Contains(out, "hunter2pass") {
		t.Fatalf("exit %d, want 1 and %q:\n%s", code, want, out)
	}
}
