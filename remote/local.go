package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Local is a Host on this machine: for --local ROOT, for running on the host
// itself, and as the reference the SSH host is tested against. GoSums
// answers the pipeline's token sums with the agent's Go tally (outcomes
// examined) where the bare host's awk would run: what --local uses; the
// tests of the fallback keep the awk.
type Local struct{ GoSums bool }

func (Local) Stat(_ context.Context, path string) (FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		if t, lerr := os.Readlink(path); lerr == nil && errors.Is(err, fs.ErrNotExist) {
			return FileInfo{}, &hostError{path: path, msg: danglingText(strings.TrimRight(t, "\n"))} // as the agent and the fallback say it
		}
		return FileInfo{}, err
	}
	return FileInfo{Name: st.Name(), Size: st.Size(), ModTime: st.ModTime(), IsDir: st.IsDir(), Mode: st.Mode().Type()}, nil
}

func (Local) ReadAt(_ context.Context, path string, off int64, n int) ([]byte, error) {
	f, err := openRegular(path) // a FIFO is an error, not a read that waits for a writer
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:m], nil
}

func (Local) Glob(_ context.Context, pattern string) ([]string, error) {
	return filepath.Glob(pattern)
}

func (l Local) Exec(ctx context.Context, argv ...string) (ExecResult, error) {
	return l.ExecInput(ctx, nil, argv...)
}

// ExecInput is Exec with stdin read from in.
func (l Local) ExecInput(ctx context.Context, in io.Reader, argv ...string) (ExecResult, error) {
	if !l.GoSums {
		return runLocal(ctx, in, argv)
	}
	if out, errb, ok := localSums().answerSums(argv); ok { // the agent's Go tally, not the host's awk
		return ExecResult{Stdout: out, Stderr: errb}, nil
	}
	return runLocal(ctx, in, argv)
}

func runLocal(ctx context.Context, in io.Reader, argv []string) (ExecResult, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	// the same shell line the SSH host would send, so quoting is exercised alike
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", CommandLine(argv...))
	cmd.Stdin = in
	out, errb := newCapBuffer(MaxExecOutput), newCapBuffer(maxExecStderr)
	cmd.Stdout, cmd.Stderr = out, errb
	// past the bound the command's group is ended (sh's children hold the pipe too)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return ExecResult{}, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	go func() {
		select {
		case <-out.over:
			_ = cmd.Cancel()
		case <-ctx.Done():
		}
	}()
	err := cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // sh ended well; a child that left its group (setsid) still held the output
	}
	res, cutErr := captured(argv[0], out, errb)
	if cutErr != nil {
		return res, cutErr
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.ExitCode = ee.ExitCode()
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	return res, nil
}

// localSums are the token sums of this machine's files, kept for the
// process as the agent keeps its host's: a local root is read by the same
// Go tally (outcomes examined), never the awk the fallback sends.
var localSums = sync.OnceValue(func() *tokenSums { return &tokenSums{files: map[string]*sumState{}} })

func (Local) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

func (Local) WriteFile(_ context.Context, path string, data []byte, mode uint32) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, data, os.FileMode(mode)); err != nil {
		return err
	}
	if err := os.Chmod(tmp, os.FileMode(mode)); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func (Local) Close() error { return nil }
