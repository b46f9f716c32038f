package remote

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The agent reads the root's files while its procs op's scan runs (a
// request's ops run at once): the scan finds the agent holding them, and
// its record (a command line holding the first request in base64) went
// over the link for the laptop to drop. The op leaves the agent out, and
// keeps a real writer of the root's files.
func TestProcsLeavesTheAgentOut(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc")
	}
	root := t.TempDir()
	data := filepath.Join(root, "raw_responses.jsonl")
	if err := os.WriteFile(data, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(data) // the agent reading, as a taild or each op does
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := exec.Command("sh", "-c", `exec 3>>"$1"; echo ready; exec sleep 30`, "writer", data)
	out, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Process.Kill(); w.Wait() }()
	if _, err := out.Read(make([]byte, 6)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b bytes.Buffer
	r := &recorder{ctx: ctx, w: &b, nonce: "~n"}
	r.procs(filepath.Join(root, "no-worker.json"), "5", HoldersArgv([]string{GlobEscape(root) + "/*"}))
	self, writer := strconv.Itoa(os.Getpid()), strconv.Itoa(w.Process.Pid)
	got := b.String()
	if !strings.Contains(got, writer+" 3 ") || !strings.Contains(got, "/proc/"+writer+"/cmdline") {
		t.Fatalf("the writer %s is not in the answer:\n%s", writer, got)
	}
	if strings.Contains(got, self+" "+strconv.Itoa(int(f.Fd()))+" ") || strings.Contains(got, "/proc/"+self+"/") {
		t.Fatalf("the agent (%s) is in the answer:\n%s", self, got)
	}
}
