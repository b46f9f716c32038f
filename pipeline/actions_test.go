package pipeline

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Restart puts the chosen category first and passes every category as its
// own --only, so a name with a comma reaches the worker whole.
func TestRestartPassesEachCategory(t *testing.T) {
	root := t.TempDir()
	argsFile := filepath.Join(root, "args")
	bin := filepath.Join(root, "fake-synthwatch")
	write(t, bin, "#!/bin/sh\nprintf '%s\\n' \"$@\" > "+argsFile+"\nsleep 5\n")
	must(t, os.Chmod(bin, 0o755))
	a := Actor{H: localHost(), Root: root, WorkerBin: bin, Extra: []string{"--concurrency", "4"}}
	res, err := a.Restart(t.Context(), "a,b", []string{"A", "a,b", "C"}, time.Second, 0)
	if res.PID > 0 {
		defer stopLaunched(res.PID)
	}
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	got, _ := os.ReadFile(argsFile)
	want := "worker\n--root\n" + root + "\n--only\na,b\n--only\nA\n--only\nC\n--concurrency\n4\n"
	if string(got) != want {
		t.Fatalf("worker got args\n%q\nwant\n%q", got, want)
	}
	if _, err := a.Restart(t.Context(), "a", []string{"A", "a,b"}, time.Second, 0); err == nil {
		t.Error("restart of a category that is not there")
	}
}
