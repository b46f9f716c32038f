package worker

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Every file the worker opens is opened without blocking and checked to be
// a regular file before it is read or written: a FIFO planted where
// raw_responses.jsonl or pipeline.toml should be used to hang the worker
// in open(2), deaf to SIGTERM (integrity review finding 1). Output files are
// opened with O_NOFOLLOW too: a symlink planted at errors.jsonl made the
// worker truncate and append to a file outside the root (finding 7).

// ErrNotRegular is the error for a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// openInput opens path for reading; a symlink to a regular file is fine
// (prompts kept elsewhere), anything else that is not a regular file is not.
func openInput(path string) (*os.File, error) { return openRegular(path, os.O_RDONLY, 0, true) }

// openOutput opens path to write (flag as os.OpenFile's), never through a
// symlink.
func openOutput(path string, flag int, perm os.FileMode) (*os.File, error) {
	return openRegular(path, flag, perm, false)
}

func openRegular(path string, flag int, perm os.FileMode, follow bool) (*os.File, error) {
	flag |= syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if !follow {
		flag |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		if !follow && errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symlink: the worker writes its output files only in place (remove the link): %w", path, ErrNotRegular)
		}
		if errors.Is(err, syscall.ENXIO) { // O_WRONLY|O_NONBLOCK on a FIFO without a reader
			return nil, fmt.Errorf("%s is a FIFO: %w", path, ErrNotRegular)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %s: %w", path, kindOf(st.Mode()), ErrNotRegular)
	}
	// reads and writes of a regular file never block: O_NONBLOCK may stay
	return f, nil
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// readInput reads a whole input file (the manifest, the api key file)
// the way openInput opens it.
func readInput(path string) ([]byte, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
