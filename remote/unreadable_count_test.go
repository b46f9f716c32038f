package remote

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nobodyHost runs the fallback's command as nobody when the test runs as
// root (a file of root's, mode 0600, is then one it may not read), else
// as the user.
type nobodyHost struct{ Local }

func (nobodyHost) Exec(ctx context.Context, argv ...string) (ExecResult, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Dir = &out, &errb, "/"
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ExecResult{Stdout: out.Bytes(), Stderr: errb.Bytes(), ExitCode: ee.ExitCode()}, nil
	}
	return ExecResult{Stdout: out.Bytes(), Stderr: errb.Bytes()}, err
}

// A file the host's user may not read, counted on the host (a prompts
// file past AgentRemoteAbove, a records file past 256 KB), says why, as a
// read of it does: not "read 0 of N bytes".
func TestFallbackCountOfAnUnreadableFileSaysWhy(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // nobody walks to it
	f := filepath.Join(dir, "prompts.jsonl")
	writeFile(t, f, strings.Repeat("{\"id\":1}\n", 300))
	mode := os.FileMode(0o600)
	if os.Geteuid() != 0 {
		mode = 0
	}
	if err := os.Chmod(f, mode); err != nil {
		t.Fatal(err)
	}
	c := NewCounter(f)
	c.RemoteAbove = 1 << 10
	b := &Batch{}
	b.Count(c)
	if err := NewFallback(nobodyHost{}).Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	up := (&Poller{Counters: []*Counter{c}, Asks: b.PollAsks()}).Poll(context.Background(), failHost{}).Counts[0]
	if up.Err == nil || !strings.Contains(up.Err.Error(), "Permission denied") {
		t.Fatalf("the count of an unreadable file: %+v, want Permission denied", up)
	}
}
